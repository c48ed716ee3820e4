// The direct decode matvec for Q4_0, Q8_0 and Q4_K (mmvq_stream_args.cuh): the kernel
// stream_matvec launches when every matrix is Q4_0 with rows of whole 8-block units (n_in a
// multiple of 256), every matrix Q8_0 with rows of whole 4-block units (n_in a multiple of 128),
// or every matrix Q4_K (units of one 256-element super-block; dot_unit_q4_k).
//
// Why: the ring kernel (mmvq_stream.cu) reads a Q4_0 block in quarters from shared memory at its
// 2-byte alignment; on the H200 it moved 7B weights at 31-49 % of the streaming read, with the
// SM issuing half the time (ncu): instructions per byte, not bytes in flight, were the limit.
// 8 Q4_0 blocks are 144 bytes = 9 aligned 16-byte words (4 Q8_0 blocks: 136 bytes = 17 aligned
// 8-byte words), so a lane loads a whole unit straight into registers, finds each block's scale
// and codes there with at most one byte permute per int (blocks alternate between starting on a
// word and 2 bytes into one), and reads the activation codes as two 16-byte words per block from
// a split copy of the Q8_1 row in shared memory: ~33 instructions per 18-byte Q4_0 block and row.
// The loads are coalesced: a half-warp reads its 16 units' bytes as consecutive words (lane l
// takes words l, l + 16, ...: 256 contiguous bytes per instruction and half) and passes them
// through a per-warp staging area in shared memory so that lane l then holds unit l. Loading
// each lane's own 144 bytes instead touched 16 lines 144 bytes apart per instruction, each sector
// twice (measured: 58-66 % of the streaming read on the 7B FFN shapes).
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
// Math per block (Q8_1 activations a, scale d_a; Q4_0 codes q in 0..15, value d_w (q - 8); Q8_0
// codes q signed, value d_w q):
//     isum = sum_k q_k a_k [- 8 * sum_k a_k]   (exact integers; sum_k a_k precomputed per block)
//     acc  = fma(d_w * d_a, float(isum), acc)
// Shared memory: the Q8_1 row (as the prologue writes it), its codes as int4 pairs per block and
// (d_a, sum a) per block, both padded per unit: the lanes of a half-warp read the same block of
// 16 different units, 256 (codes) and 64 (ActBlock) bytes apart without the pad (Q4_0), all in
// one bank group (16- and 8-way conflicts; measured 1.5x slower than the ring kernel); with one
// 16-byte pad per unit of codes (stride 272, Q8_0 144) and one ActBlock per unit (stride 72, Q8_0
// 40), consecutive units start in different bank groups.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/matvec_phases.cuh"
#include "cuda/mmvq_stream_args.cuh"
#include "cuda/pdl.cuh"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda::stream_detail {
namespace {

constexpr int kHalf = 16;  // lanes per row

// A unit: kBlocks consecutive blocks of a row, loaded as kLoads words of type Load.
template <WeightType T> struct Unit;
template <> struct Unit<WeightType::Q4_0> {
  static constexpr int kBlocks = 8, kBlockBytes = 18, kLoads = 9, kOffset = 8;  // codes q - 8
  using Load = uint4;
};
template <> struct Unit<WeightType::Q8_0> {
  static constexpr int kBlocks = 4, kBlockBytes = 34, kLoads = 17, kOffset = 0;
  using Load = uint2;
};
// Q4_K: a unit is one 256-element super-block (144 bytes: d, dmin, 12 bytes of 6-bit scales and
// mins, 128 bytes of codes), every field 4-byte aligned within it; kBlocks counts its 32-element
// sub-blocks (one Q8_1 block each).
template <> struct Unit<WeightType::Q4_K> {
  static constexpr int kBlocks = 8, kBlockBytes = 18, kLoads = 9;  // kBlockBytes: 144 / 8
  using Load = uint4;
};
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144);
static_assert(8 * 18 == 9 * sizeof(uint4) && 4 * 34 == 17 * sizeof(uint2));
static_assert(offsetof(BlockQ4_K, scales) == 4 && offsetof(BlockQ4_K, qs) == 16);
template <WeightType T> constexpr int kUnitBytes = Unit<T>::kBlocks * Unit<T>::kBlockBytes;
template <WeightType T> constexpr int kUnitWords32 = kUnitBytes<T> / 4;

struct ActBlock {
  float d;  // d_a
  union {
    int sum;  // Q4_0: the sum of the block's 32 codes (exact)
    float s;  // Q4_K: the Q8_1 block's stored s = d_a * sum (f16), for the mins, as mmvq.cu uses it
  };
};

// Shared-memory layout after the Q8_1 row: codes [units][kCodeStride] int4, then
// [units][kActStride] ActBlock (the last of each unit's row a pad).
template <WeightType T> constexpr int kCodeStride = 2 * Unit<T>::kBlocks + 1;  // int4 per unit
template <WeightType T> constexpr int kActStride = Unit<T>::kBlocks + 1;       // ActBlock per unit
struct Smem {
  const int4* codes;
  const ActBlock* act;
};
template <WeightType T>
__host__ __device__ constexpr int64_t code_bytes(int64_t units) { return units * kCodeStride<T> * 16; }
template <WeightType T>
__host__ __device__ constexpr int64_t act_bytes(int64_t units) { return (units * kActStride<T> * 8 + 15) / 16 * 16; }
// Per warp, the staging area of one step: [half][kHalf units * kLoads words].
template <WeightType T> constexpr int kStageWords = 2 * kHalf * Unit<T>::kLoads;
template <WeightType T>
__host__ __device__ constexpr int64_t stage_bytes() { return kWarps * kStageWords<T> * sizeof(typename Unit<T>::Load); }

// The n 32-bit words of a block's codes starting at byte `at` of the unit (a multiple of 2).
template <int kAt, int kN>
__device__ __forceinline__ void words_at(const uint32_t* u, int (&q)[kN]) {
#pragma unroll
  for (int t = 0; t < kN; ++t) {
    if constexpr (kAt % 4 == 0) q[t] = static_cast<int>(u[kAt / 4 + t]);
    else q[t] = static_cast<int>(__byte_perm(u[kAt / 4 + t], u[kAt / 4 + t + 1], 0x5432));
  }
}

// The dot of one Q4_K super-block (words u) with unit `unit` of the activation. Sub-block j:
// value = d sc_j q - dmin m_j (q in 0..15), so its sum over the Q8_1 block (d_a, s_a) is
//     (d sc_j) d_a isum_j - (dmin m_j) s_a,   isum_j = sum_k q_k a_k  (exact integers),
// mmvq.cu's group formula (quant_blocks.cuh, AffineKCodes) for a whole sub-block. The 64
// elements of pair c: bytes 32c.. of the codes, low nibbles sub-block 2c, high ones 2c + 1.
// Scales (get_scale_min_k4): bytes 0-3 hold sc_0..3 (low 6 bits), 4-7 m_0..3, 8-11 the low 4
// bits of sc_4..7 and m_4..7 (low / high nibble), whose top 2 bits are the top bits of bytes 0-7.
__device__ __forceinline__ float dot_unit_q4_k(const uint32_t* u, const Smem& sm, int unit, float acc) {
  constexpr int kStride = kCodeStride<WeightType::Q4_K>;
  const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(u[0] & 0xFFFFu)));
  const float dmin = __half2float(__ushort_as_half(static_cast<unsigned short>(u[0] >> 16)));
  const uint32_t sc_lo = u[1] & 0x3F3F3F3Fu, m_lo = u[2] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (u[3] & 0x0F0F0F0Fu) | ((u[1] >> 2) & 0x30303030u);
  const uint32_t m_hi = ((u[3] >> 4) & 0x0F0F0F0Fu) | ((u[2] >> 2) & 0x30303030u);
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const uint32_t* q = u + 4 + 8 * c;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // h = 0: low nibbles, sub-block 2c; 1: high, 2c + 1
      const int j = 2 * c + h;
      const int4 a_lo = sm.codes[kStride * unit + 2 * j], a_hi = sm.codes[kStride * unit + 2 * j + 1];
      const ActBlock ab = sm.act[kActStride<WeightType::Q4_K> * unit + j];
      const auto nib = [&](int t) { return static_cast<int>((q[t] >> (4 * h)) & 0x0F0F0F0Fu); };
      int isum = __dp4a(nib(0), a_lo.x, 0);
      isum = __dp4a(nib(1), a_lo.y, isum);
      isum = __dp4a(nib(2), a_lo.z, isum);
      isum = __dp4a(nib(3), a_lo.w, isum);
      isum = __dp4a(nib(4), a_hi.x, isum);
      isum = __dp4a(nib(5), a_hi.y, isum);
      isum = __dp4a(nib(6), a_hi.z, isum);
      isum = __dp4a(nib(7), a_hi.w, isum);
      const uint32_t scw = j < 4 ? sc_lo : sc_hi, mw = j < 4 ? m_lo : m_hi;
      const int sc = static_cast<int>((scw >> (8 * (j % 4))) & 0xFFu), m = static_cast<int>((mw >> (8 * (j % 4))) & 0xFFu);
      acc = fmaf(d * static_cast<float>(sc) * ab.d, static_cast<float>(isum), acc);
      acc = fmaf(-(dmin * static_cast<float>(m)), ab.s, acc);
    }
  }
  return acc;
}

// The dot of one unit (the row's words w) with unit `unit` of the activation.
template <WeightType T, int J = 0>
__device__ __forceinline__ float dot_unit(const uint32_t* u, const Smem& sm, int unit, float acc) {
  if constexpr (T == WeightType::Q4_K) {
    return dot_unit_q4_k(u, sm, unit, acc);
  } else if constexpr (J == Unit<T>::kBlocks) {
    return acc;
  } else {
    // Block J: bytes kBlockBytes*J ..: the f16 scale, then the codes.
    constexpr int kAt = Unit<T>::kBlockBytes * J;
    const uint32_t dbits = kAt % 4 == 0 ? u[kAt / 4] & 0xFFFFu : u[kAt / 4] >> 16;
    const int4 a_lo = sm.codes[kCodeStride<T> * unit + 2 * J], a_hi = sm.codes[kCodeStride<T> * unit + 2 * J + 1];
    const ActBlock ab = sm.act[kActStride<T> * unit + J];
    int isum = -Unit<T>::kOffset * ab.sum;
    if constexpr (T == WeightType::Q4_0) {
      int q[4];
      words_at<kAt + 2, 4>(u, q);
      // Low nibbles: elements 4t..4t+3 (codes of a_lo), high nibbles: 16+4t.. (a_hi).
      isum = __dp4a(q[0] & 0x0F0F0F0F, a_lo.x, isum);
      isum = __dp4a(q[1] & 0x0F0F0F0F, a_lo.y, isum);
      isum = __dp4a(q[2] & 0x0F0F0F0F, a_lo.z, isum);
      isum = __dp4a(q[3] & 0x0F0F0F0F, a_lo.w, isum);
      isum = __dp4a((q[0] >> 4) & 0x0F0F0F0F, a_hi.x, isum);
      isum = __dp4a((q[1] >> 4) & 0x0F0F0F0F, a_hi.y, isum);
      isum = __dp4a((q[2] >> 4) & 0x0F0F0F0F, a_hi.z, isum);
      isum = __dp4a((q[3] >> 4) & 0x0F0F0F0F, a_hi.w, isum);
    } else {
      int q[8];
      words_at<kAt + 2, 8>(u, q);
      isum = __dp4a(q[0], a_lo.x, isum);
      isum = __dp4a(q[1], a_lo.y, isum);
      isum = __dp4a(q[2], a_lo.z, isum);
      isum = __dp4a(q[3], a_lo.w, isum);
      isum = __dp4a(q[4], a_hi.x, isum);
      isum = __dp4a(q[5], a_hi.y, isum);
      isum = __dp4a(q[6], a_hi.z, isum);
      isum = __dp4a(q[7], a_hi.w, isum);
    }
    const float dw = __half2float(__ushort_as_half(static_cast<unsigned short>(dbits)));
    return dot_unit<T, J + 1>(u, sm, unit, fmaf(dw * ab.d, static_cast<float>(isum), acc));
  }
}

// Loads a half-warp's chunk of up to kHalf units (n_words words from p) coalesced: lane hl takes
// words hl, hl + kHalf, ... (each load instruction reads 256 / 128 contiguous bytes per half).
template <WeightType T>
__device__ __forceinline__ void load_chunk(const uint8_t* p, int n_words, int hl,
                                           typename Unit<T>::Load (&w)[Unit<T>::kLoads]) {
  const auto* pw = reinterpret_cast<const typename Unit<T>::Load*>(p) + hl;  // then constant offsets
  const int left = n_words - hl;
#pragma unroll
  for (int i = 0; i < Unit<T>::kLoads; ++i)
    if (kHalf * i < left) w[i] = __ldg(pw + kHalf * i);
}

// The transpose of load_chunk through the half's staging area: afterwards lane hl holds unit hl
// of the chunk (when the chunk has it; the words past a short chunk's end are stale, and the lanes
// holding them compute nothing). Called by the whole warp; no predicates: the staging area holds a
// whole chunk.
template <WeightType T>
__device__ __forceinline__ void own_unit(typename Unit<T>::Load* stage, int hl,
                                         typename Unit<T>::Load (&w)[Unit<T>::kLoads]) {
#pragma unroll
  for (int i = 0; i < Unit<T>::kLoads; ++i) stage[hl + kHalf * i] = w[i];
  __syncwarp();
#pragma unroll
  for (int i = 0; i < Unit<T>::kLoads; ++i) w[i] = stage[hl * Unit<T>::kLoads + i];
  __syncwarp();  // every lane has read before the next step writes
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

template <WeightType T, bool kQuantize>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) mmvq_direct_kernel(const Args a) {
  using U = Unit<T>;
  using Load = typename U::Load;
  using Words = Load[U::kLoads];
  extern __shared__ __align__(16) unsigned char smem[];
  MINFER_PHASES_BEGIN
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int half = lane / kHalf, hl = lane % kHalf;
  auto* xq = reinterpret_cast<BlockQ8_1*>(smem);
  const int nb = a.p.n_in / QK;
  const int units = nb / U::kBlocks;                // per row
  const int k_steps = (units + kHalf - 1) / kHalf;  // steps per group
  const Smem sm{reinterpret_cast<const int4*>(smem + a.xq_smem_bytes),
                reinterpret_cast<const ActBlock*>(smem + a.xq_smem_bytes + code_bytes<T>(units))};
  Load* const stage = reinterpret_cast<Load*>(smem + a.xq_smem_bytes + code_bytes<T>(units) + act_bytes<T>(units)) +
                      warp * kStageWords<T> + half * kHalf * U::kLoads;
  // Words of step k's chunk of a row (its units are kHalf * k ..).
  const auto chunk_words = [&](int k) { return min(kHalf, units - kHalf * k) * U::kLoads; };

  const int64_t n_warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t wid = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  const int64_t g0 = wid * a.n_groups / n_warps, g1 = (wid + 1) * a.n_groups / n_warps;

  // Loads this lane's words of the load cursor's step and advances it (nothing past the warp's
  // groups or the row's units).
  Cursor lc{g0, 0};
  const auto load = [&](Words& w) {
    if (lc.g < g1) {
      const Mat& m = a.m[mat_of(a, lc.g)];
      const uint8_t* rows[2];
      group_rows(m, lc.g - m.group_begin, rows);
      load_chunk<T>(rows[half] + static_cast<int64_t>(kHalf) * lc.k * kUnitBytes<T>, chunk_words(lc.k), hl, w);
    }
    lc.advance(k_steps);
  };

  // The first two steps' weights before the wait (weights only: pdl.cuh rule 3), so a warp of a
  // small matvec (QKV, o: one or two groups of one step each) has all its loads in flight while
  // the previous kernel drains, not the second one's DRAM round trip after the prologue.
  Words buf0, buf1;
  load(buf0);
  load(buf1);
  if constexpr (kQuantize) prefetch_prologue_weight(a.p);

  pdl_wait();
  pdl_launch_dependents();
  MINFER_PHASE_MARK(1)
  if constexpr (kQuantize) {
    quantize_prologue(a.p, blockIdx.x == 0 ? a.p.x_hat_out : nullptr, xq);
  } else {
    // Every word's copy in flight at once (cp.async): one L2 round trip, not one per pass.
    const int n_ints = nb * static_cast<int>(sizeof(BlockQ8_1) / 4);
    const int* src = reinterpret_cast<const int*>(a.xq_in);
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    for (int i = threadIdx.x; i < n_ints; i += kThreads)
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst + 4u * i), "l"(src + i) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
  }
  // The split copy: codes as two int4 per block (16-byte aligned), (d_a, sum of codes) per block.
  {
    int4* codes = reinterpret_cast<int4*>(smem + a.xq_smem_bytes);
    ActBlock* act = reinterpret_cast<ActBlock*>(smem + a.xq_smem_bytes + code_bytes<T>(units));
    for (int i = threadIdx.x; i < nb * 2; i += kThreads) {
      const int b = i / 2;
      const int* c = reinterpret_cast<const int*>(xq[b].qs) + 4 * (i % 2);
      codes[kCodeStride<T> * (b / U::kBlocks) + 2 * (b % U::kBlocks) + i % 2] = make_int4(c[0], c[1], c[2], c[3]);
    }
    for (int b = threadIdx.x; b < nb; b += kThreads) {
      ActBlock ab;
      const float2 ds = qb::q8_1_ds(xq + b);
      ab.d = ds.x;
      if constexpr (T == WeightType::Q4_K) {
        ab.s = ds.y;
      } else {
        const int* c = reinterpret_cast<const int*>(xq[b].qs);
        ab.sum = 0;
#pragma unroll
        for (int t = 0; t < 8; ++t) ab.sum = __dp4a(c[t], 0x01010101, ab.sum);
      }
      act[kActStride<T> * (b / U::kBlocks) + b % U::kBlocks] = ab;
    }
    __syncthreads();
  }
  MINFER_PHASE_MARK(2)

  float sum = 0.0f;
  // Finished groups wait for their epilogue in lane q of the warp (q: the group's place in the
  // batch of up to 32 since the last flush), and a flush runs the epilogues of the whole batch
  // in parallel: one lane-0 epilogue per group cost as many issue slots as a step's dot products.
  float row_a = 0.0f, row_b = 0.0f;
  int64_t batch_g = g0;
  int batch_n = 0;
  const auto flush = [&] {
    if (lane < batch_n) {
      const int64_t g = batch_g + lane;
      const Mat& m = a.m[mat_of(a, g)];
      const float sums[2] = {row_a, row_b};
      epilogue(m, g - m.group_begin, sums);
    }
    // SwiGLU with a Q8_1 copy (one matrix: group = row): the blocks this batch completes.
    if (a.m[0].y_q8_1 && batch_n > 0) quantize_done_blocks(a.m[0], batch_g, batch_n, lane);
    batch_g += batch_n;
    batch_n = 0;
  };
  // The step cursor's step computes from one buffer while the other's loads (the next step's)
  // are in flight; a buffer is refilled (two steps ahead) as soon as its step is done.
  Cursor sc{g0, 0};
  const auto step = [&](Words& w) {
    own_unit<T>(stage, hl, w);
    const int unit = hl + kHalf * sc.k;
    if (unit < units) sum = dot_unit<T>(reinterpret_cast<const uint32_t*>(w), sm, unit, sum);
    if (sc.k == k_steps - 1) {  // the group's last step (warp-uniform): reduce, park the sums
      float v = sum;
#pragma unroll
      for (int off = kHalf / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
      const float va = __shfl_sync(0xffffffffu, v, 0), vb = __shfl_sync(0xffffffffu, v, kHalf);
      if (lane == batch_n) {
        row_a = va;
        row_b = vb;
      }
      if (++batch_n == 32) flush();
      sum = 0.0f;
    }
    sc.advance(k_steps);
  };
  while (sc.g < g1) {
    step(buf0);
    load(buf0);
    if (sc.g < g1) {
      step(buf1);
      load(buf1);
    }
  }
  flush();
  MINFER_PHASES_END(a.m[0].w, a.n_groups, kQuantize)
}

template <WeightType T, bool kQuantize>
void launch(const Args& a, unsigned grid, cudaStream_t s, const char* kernel) {
  constexpr int64_t kMaxUnits = kMaxStreamInput / (Unit<T>::kBlocks * QK);
  constexpr int max_smem = static_cast<int>(kMaxStreamInput / QK * sizeof(BlockQ8_1) + code_bytes<T>(kMaxUnits) +
                                            act_bytes<T>(kMaxUnits) + stage_bytes<T>());
  static_assert(max_smem <= 110 * 1024, "two CTAs per SM must fit");
  static const bool sized = [] {  // once per kernel, before its first launch (also inside a capture)
    CUDA_CHECK(cudaFuncSetAttribute(mmvq_direct_kernel<T, kQuantize>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    max_smem));
    return true;
  }();
  (void)sized;
  const int64_t units = a.p.n_in / (Unit<T>::kBlocks * QK);
  const size_t smem = static_cast<size_t>(a.xq_smem_bytes + code_bytes<T>(units) + act_bytes<T>(units) + stage_bytes<T>());
  launch_pdl(kernel, mmvq_direct_kernel<T, kQuantize>, grid, kThreads, smem, s, a);
}

template <WeightType T>
void launch_type(const Args& a, unsigned grid, cudaStream_t s, const char* q8_1_name, const char* f32_name) {
  for (int i = 0; i < a.n_mats; ++i)
    if ((reinterpret_cast<uintptr_t>(a.m[i].w) | reinterpret_cast<uintptr_t>(a.m[i].w_up)) %
            sizeof(typename Unit<T>::Load) != 0)
      fail("mmvq (direct): ", name(T), " weights must be ", sizeof(typename Unit<T>::Load), "-byte aligned");
  if (a.xq_in) launch<T, false>(a, grid, s, q8_1_name);
  else launch<T, true>(a, grid, s, f32_name);
}

}  // namespace

bool direct_usable(WeightType t, int64_t n_in) {
  if (n_in > kMaxStreamInput) return false;
  if (t == WeightType::Q4_0) return n_in % (Unit<WeightType::Q4_0>::kBlocks * QK) == 0;
  if (t == WeightType::Q8_0) return n_in % (Unit<WeightType::Q8_0>::kBlocks * QK) == 0;
  if (t == WeightType::Q4_K) return n_in % QK_K == 0;
  return false;
}

void launch_direct(const Args& a, unsigned grid, cudaStream_t s) {
  for (int i = 1; i < a.n_mats; ++i)
    if (a.m[i].type != a.m[0].type) fail("mmvq (direct): one weight type per launch");
  switch (a.m[0].type) {
    case WeightType::Q4_0:
      return launch_type<WeightType::Q4_0>(a, grid, s, "mmvq_direct_kernel<Q4_0, q8_1 input>",
                                           "mmvq_direct_kernel<Q4_0, f32 input>");
    case WeightType::Q8_0:
      return launch_type<WeightType::Q8_0>(a, grid, s, "mmvq_direct_kernel<Q8_0, q8_1 input>",
                                           "mmvq_direct_kernel<Q8_0, f32 input>");
    case WeightType::Q4_K:
      return launch_type<WeightType::Q4_K>(a, grid, s, "mmvq_direct_kernel<Q4_K, q8_1 input>",
                                           "mmvq_direct_kernel<Q4_K, f32 input>");
    default: fail("mmvq (direct): weight type ", name(a.m[0].type), " has no direct kernel");
  }
}

}  // namespace minfer::cuda::stream_detail
