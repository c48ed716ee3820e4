// The direct decode matvec for Q4_0 (mmvq_stream_args.cuh): the kernel stream_matvec launches
// when every matrix is Q4_0 with rows of whole 8-block units (n_in a multiple of 256).
//
// Why: the ring kernel (mmvq_stream.cu) reads a Q4_0 block in quarters from shared memory at its
// 2-byte alignment; on the H200 it moved 7B weights at 31-49 % of the streaming read, with the
// SM issuing half the time (ncu): instructions per byte, not bytes in flight, were the limit.
// 8 Q4_0 blocks are 144 bytes = 9 aligned 16-byte words, so a lane loads a whole unit straight
// into registers (9 LDG.128), finds each block's scale and codes there with at most one byte
// permute per int, and reads the activation codes as two 16-byte words per block from a split
// copy of the Q8_1 row in shared memory: ~33 instructions per 18-byte block and row.
//
// Thread-to-data. A CTA of 256 threads, 2 CTAs per SM. Warp w of the grid's n takes the groups
// [w * G / n, (w + 1) * G / n) (groups as the ring kernel's: two rows of a matvec, or gate row i
// with up row i). Half-warp h of a warp computes row h of the group; its lane l (0..15) takes the
// units l, l + 16, ... of that row, one per step, and the warp runs its groups' steps (ceil(U/16)
// per group, U = n_in / 256) as one sequence with the next step's 144 bytes loaded while the
// current one is computed (two register buffers). A row's sum: each lane's units in order, then a
// 16-lane butterfly; so it depends on n_in only, never on the grid, the group or the half: mmvq,
// mmvq_fused and mmvq_swiglu_fused give a row the same bits.
//
// Math per block (Q8_1 activations a, scale d_a; weight codes q in 0..15, value d_w (q - 8)):
//     isum = sum_k q_k a_k - 8 * sum_k a_k     (exact integers; sum_k a_k precomputed per block)
//     acc  = fma(d_w * d_a, float(isum), acc)
// Shared memory: the Q8_1 row (as the prologue writes it), its codes as int4 pairs per block and
// (d_a, sum a) per block, both padded per unit: the lanes of a half-warp read the same block of
// 16 different units, 256 (codes) and 64 (ActBlock) bytes apart without the pad, all in one bank
// group (16- and 8-way conflicts); with one 16-byte pad per unit of codes (stride 272) and one
// ActBlock per unit (stride 72), 8 consecutive units start in 8 different 16-byte bank groups.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/mmvq_stream_args.cuh"
#include "cuda/pdl.cuh"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda::stream_detail {
namespace {

constexpr int kUnitBlocks = 8;                                    // blocks per unit
constexpr int kUnitBytes = kUnitBlocks * sizeof(BlockQ4_0);       // 144
constexpr int kUnitWords = kUnitBytes / 16;                       // 9 16-byte words
constexpr int kHalf = 16;                                         // lanes per row
static_assert(sizeof(BlockQ4_0) == 18 && kUnitBytes % 16 == 0);

struct ActBlock {
  float d;   // d_a
  int sum;   // sum of the block's 32 codes
};

// Shared-memory layout after the Q8_1 row: codes [units][kCodeStride] int4, then
// [units][kActStride] ActBlock (the last of each unit's row a pad).
constexpr int kCodeStride = 2 * kUnitBlocks + 1;  // int4 per unit
constexpr int kActStride = kUnitBlocks + 1;       // ActBlock per unit
struct Smem {
  const int4* codes;
  const ActBlock* act;
};
__host__ __device__ constexpr int64_t code_bytes(int64_t units) { return units * kCodeStride * 16; }
__host__ __device__ constexpr int64_t act_bytes(int64_t units) { return units * kActStride * 8; }

// The dot of one 8-block unit (words w: 144 bytes of one row) with unit `unit` of the activation.
__device__ __forceinline__ float dot_unit(const uint4 (&w)[kUnitWords], const Smem& sm, int unit) {
  const uint32_t* u = reinterpret_cast<const uint32_t*>(w);
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < kUnitBlocks; ++j) {
    // Block j occupies bytes 18j .. 18j+17: scale (2 bytes), then 16 bytes of codes. For even j
    // the block starts on a word, so the codes straddle words; for odd j they start on one.
    uint32_t dbits;
    int q[4];
    if (j % 2 == 0) {
      const int w0 = 9 * j / 2;
      dbits = u[w0] & 0xFFFFu;
#pragma unroll
      for (int t = 0; t < 4; ++t) q[t] = static_cast<int>(__byte_perm(u[w0 + t], u[w0 + t + 1], 0x5432));
    } else {
      const int w0 = (9 * j - 1) / 2;
      dbits = u[w0] >> 16;
#pragma unroll
      for (int t = 0; t < 4; ++t) q[t] = static_cast<int>(u[w0 + 1 + t]);
    }
    const int4 a_lo = sm.codes[kCodeStride * unit + 2 * j], a_hi = sm.codes[kCodeStride * unit + 2 * j + 1];
    const ActBlock ab = sm.act[kActStride * unit + j];
    // Low nibbles: elements 4t..4t+3 (codes of a_lo), high nibbles: 16+4t.. (a_hi).
    int isum = -8 * ab.sum;
    isum = __dp4a(q[0] & 0x0F0F0F0F, a_lo.x, isum);
    isum = __dp4a(q[1] & 0x0F0F0F0F, a_lo.y, isum);
    isum = __dp4a(q[2] & 0x0F0F0F0F, a_lo.z, isum);
    isum = __dp4a(q[3] & 0x0F0F0F0F, a_lo.w, isum);
    isum = __dp4a((q[0] >> 4) & 0x0F0F0F0F, a_hi.x, isum);
    isum = __dp4a((q[1] >> 4) & 0x0F0F0F0F, a_hi.y, isum);
    isum = __dp4a((q[2] >> 4) & 0x0F0F0F0F, a_hi.z, isum);
    isum = __dp4a((q[3] >> 4) & 0x0F0F0F0F, a_hi.w, isum);
    const float dw = __half2float(__ushort_as_half(static_cast<unsigned short>(dbits)));
    acc = fmaf(dw * ab.d, static_cast<float>(isum), acc);
  }
  return acc;
}

__device__ __forceinline__ void load_unit(const uint8_t* p, uint4 (&w)[kUnitWords]) {
  const uint4* p4 = reinterpret_cast<const uint4*>(p);
#pragma unroll
  for (int i = 0; i < kUnitWords; ++i) w[i] = __ldg(p4 + i);
}

// Where a warp's sequence of steps stands: group g, step k of its ceil(U/16) (warp-uniform).
struct Cursor {
  int64_t g;
  int k;
  __device__ void advance(int k_steps) {
    if (++k == k_steps) {
      k = 0;
      ++g;
    }
  }
};

template <bool kQuantize>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) mmvq_direct_kernel(const Args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int half = lane / kHalf, hl = lane % kHalf;
  auto* xq = reinterpret_cast<BlockQ8_1*>(smem);
  const int nb = a.p.n_in / QK;
  const int units = nb / kUnitBlocks;            // U, per row
  const int k_steps = (units + kHalf - 1) / kHalf;  // steps per group
  const Smem sm{reinterpret_cast<const int4*>(smem + a.xq_smem_bytes),
                reinterpret_cast<const ActBlock*>(smem + a.xq_smem_bytes + code_bytes(units))};

  const int64_t n_warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t wid = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  const int64_t g0 = wid * a.n_groups / n_warps, g1 = (wid + 1) * a.n_groups / n_warps;

  // Loads this lane's unit of the load cursor's step and advances it (nothing past the warp's
  // groups or the row's units).
  Cursor lc{g0, 0};
  const auto load = [&](uint4 (&w)[kUnitWords]) {
    if (lc.g < g1) {
      const int unit = hl + kHalf * lc.k;
      if (unit < units) {
        const Mat& m = a.m[mat_of(a, lc.g)];
        const uint8_t* rows[2];
        group_rows(m, lc.g - m.group_begin, rows);
        load_unit(rows[half] + static_cast<int64_t>(unit) * kUnitBytes, w);
      }
    }
    lc.advance(k_steps);
  };

  uint4 buf0[kUnitWords], buf1[kUnitWords];
  load(buf0);  // weights only: before the wait (pdl.cuh rule 3)

  pdl_wait();
  pdl_launch_dependents();
  if constexpr (kQuantize) {
    quantize_prologue(a.p, blockIdx.x == 0 ? a.p.x_hat_out : nullptr, xq);
  } else {
    const int n_ints = nb * static_cast<int>(sizeof(BlockQ8_1) / 4);
    const int* src = reinterpret_cast<const int*>(a.xq_in);
    int* dst = reinterpret_cast<int*>(smem);
    for (int i = threadIdx.x; i < n_ints; i += kThreads) dst[i] = src[i];
    __syncthreads();
  }
  // The split copy: codes as two int4 per block (16-byte aligned), (d_a, sum of codes) per block.
  {
    int4* codes = reinterpret_cast<int4*>(smem + a.xq_smem_bytes);
    ActBlock* act = reinterpret_cast<ActBlock*>(smem + a.xq_smem_bytes + code_bytes(units));
    for (int i = threadIdx.x; i < nb * 2; i += kThreads) {
      const int b = i / 2;
      const int* c = reinterpret_cast<const int*>(xq[b].qs) + 4 * (i % 2);
      codes[kCodeStride * (b / kUnitBlocks) + 2 * (b % kUnitBlocks) + i % 2] = make_int4(c[0], c[1], c[2], c[3]);
    }
    for (int b = threadIdx.x; b < nb; b += kThreads) {
      const int* c = reinterpret_cast<const int*>(xq[b].qs);
      int sum = 0;
#pragma unroll
      for (int t = 0; t < 8; ++t) sum = __dp4a(c[t], 0x01010101, sum);
      act[kActStride * (b / kUnitBlocks) + b % kUnitBlocks] = ActBlock{qb::q8_1_ds(xq + b).x, sum};
    }
    __syncthreads();
  }

  float sum = 0.0f;
  // The step cursor's step computes from one buffer while the load cursor (one step ahead)
  // fills the other.
  Cursor sc{g0, 0};
  const auto step = [&](const uint4 (&w)[kUnitWords]) {
    const int unit = hl + kHalf * sc.k;
    if (unit < units) sum += dot_unit(w, sm, unit);
    if (sc.k == k_steps - 1) {  // the group's last step (warp-uniform): reduce and write
      float v = sum;
#pragma unroll
      for (int off = kHalf / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
      const float other = __shfl_sync(0xffffffffu, v, kHalf);
      const Mat& m = a.m[mat_of(a, sc.g)];
      if (lane == 0) {
        const float sums[2] = {v, other};
        epilogue(m, sc.g - m.group_begin, sums);
      }
      sum = 0.0f;
    }
    sc.advance(k_steps);
  };
  while (sc.g < g1) {
    load(buf1);
    step(buf0);
    if (sc.g < g1) {
      load(buf0);
      step(buf1);
    }
  }
}

template <bool kQuantize>
void launch(const Args& a, unsigned grid, size_t smem, cudaStream_t s, const char* kernel) {
  static const bool sized = [] {  // once per kernel, before its first launch (also inside a capture)
    constexpr int64_t kUnitsMax = kMaxStreamInput / (kUnitBlocks * QK);
    const int max_smem = static_cast<int>(kMaxStreamInput / QK * sizeof(BlockQ8_1) + code_bytes(kUnitsMax) + act_bytes(kUnitsMax));
    CUDA_CHECK(cudaFuncSetAttribute(mmvq_direct_kernel<kQuantize>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    max_smem));
    return true;
  }();
  (void)sized;
  launch_pdl(kernel, mmvq_direct_kernel<kQuantize>, grid, kThreads, smem, s, a);
}

}  // namespace

bool direct_usable(WeightType t, int64_t n_in) {
  return t == WeightType::Q4_0 && n_in % (kUnitBlocks * QK) == 0 && n_in <= kMaxStreamInput;
}

void launch_direct(const Args& a, unsigned grid, cudaStream_t s) {
  for (int i = 0; i < a.n_mats; ++i)
    if ((reinterpret_cast<uintptr_t>(a.m[i].w) | reinterpret_cast<uintptr_t>(a.m[i].w_up)) % 16 != 0)
      fail("mmvq (direct): weights must be 16-byte aligned");
  const int64_t units = a.p.n_in / (kUnitBlocks * QK);
  const size_t smem = static_cast<size_t>(a.xq_smem_bytes + code_bytes(units) + act_bytes(units));
  if (a.xq_in) launch<false>(a, grid, smem, s, "mmvq_direct_kernel<q8_1 input>");
  else launch<true>(a, grid, smem, s, "mmvq_direct_kernel<f32 input>");
}

}  // namespace minfer::cuda::stream_detail
