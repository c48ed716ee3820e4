// MMQ for Q4_0 and Q8_0 on Hopper's warpgroup tensor-core instruction (mmq_wgmma.h): 128 weight
// rows x 128 tokens per CTA, one CTA per SM. Why a third kernel: mmq_async.cu's mma.sync tile
// issues ~24 instructions per m16n8k32 mma (fragment loads, address arithmetic, the C = magic
// moves, the scales: docs/benchmarks.md, sessions 17 and 21); one wgmma reads both operands from
// shared memory and replaces 32-64 of those mma, so what is left per accumulator and 32-block is
// the per-block scale (IADD + 2 FFMA), the floor for per-block-scaled int8 on this GPU.
//
// Per K step of 128 elements (4 blocks):
//   * cp.async copies of the raw blocks, kStages-1 steps ahead (mmq_raw_copy.cuh, as mmq_async.cu: 18/34-byte
//     weight blocks in 8-byte pieces, 36-byte Q8_1 blocks in 16-byte pieces, zeros past the
//     matrix);
//   * one step ahead, the threads unpack (row, block) and (token, block) units from the raw
//     copies into int8 tiles in wgmma's K-major layout with the 128-byte swizzle (a 128-byte row
//     per weight row / token, 16-byte chunk c of row r at c ^ (r % 8): without the swizzle the
//     Q8_0 tile ran 1.7x slower on the H100), Q4_0 codes as 16 (n - 8) with the scale staged as
//     d / 16 (exact), and turn the step's f16 scales into floats; then fence.proxy.async, so
//     wgmma (the async proxy) sees those stores after the next barrier;
//   * warpgroup (wr, wn) computes rows 64 wr.. x tokens kN wn..: per block one wgmma m64nNk32
//     with scale-d = 0 (D = 16 isum or isum), whose result is then scaled into the float
//     accumulators while the other warpgroups' wgmma run.
// The update per accumulator and block is mmq.cu's, bit for bit (header of mmq_async.cu):
//   wsum = fma(d', as_float(M_bits + s isum), -d' M) = round(d isum);  acc = fma(d_a, wsum, acc)
// so test_cuda_mmq's emulation holds unchanged.
//
// Accumulator layout (PTX ISA, wgmma D fragments for m64nN; warp w of the warpgroup, g = lane/4,
// q = lane%4): element e = 4j + 2i + c is row 16w + g + 8i, token 8j + 2q + c.
// Built for sm_90a only (its own object library, engine/CMakeLists.txt); mmq_wgmma_applies checks
// that the device is compute capability 9.0.
#include "cuda/mmq_wgmma.h"

#include <bit>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/mmq_raw_copy.cuh"
#include "cuda/quant_blocks.cuh"
#include "cuda/wgmma_sm90a.cuh"

namespace minfer::cuda {
namespace {

using namespace mmq_raw;  // the tile shape and the raw copies (mmq_raw_copy.cuh)

// Warpgroups: two along the rows (64 each) x kWgN along the tokens (kN = 128 / kWgN each). On the
// H100, kWgN = 2 (512 threads, m64n64) ran the 7B Q4_0 gate/up 8 % faster (346 vs 374 us) and
// Q8_0 4 % slower; kWgN = 1 is the variant the GPU tests and memcheck have run.
constexpr int kWgN = 1, kN = kToks / kWgN, kAcc = kN / 2;  // kAcc: results per thread
constexpr int kThreads = 256 * kWgN;
constexpr int kTileBytes = kRows * kStepElems;    // one int8 operand tile (16 KB)
// Operand tiles: a 128-byte row per weight row / token (the step's 128 codes), wgmma_sm90a.cuh's layout.
constexpr int kMagicBits = 0x4B400000;
constexpr float kMagic = 12582912.0f;             // 1.5 * 2^23
static_assert(std::bit_cast<float>(kMagicBits) == kMagic);
static_assert(sizeof(BlockQ8_1) == 36);

template <WeightType T> struct Fmt;
template <> struct Fmt<WeightType::Q4_0> {
  static constexpr int kBlockBytes = 18;
  static constexpr int kRowBytes = 80;            // raw staging: 72 + 8 (the unpack reads a word past the codes)
  static constexpr float kScaleMul = 0.0625f;     // codes staged as 16 (n - 8)
  static constexpr int kStages = 5;               // 5 x 28 KB raw + 64 KB tiles
};
template <> struct Fmt<WeightType::Q8_0> {
  static constexpr int kBlockBytes = 34;
  static constexpr int kRowBytes = 144;           // 136 + 8
  static constexpr float kScaleMul = 1.0f;
  static constexpr int kStages = 4;               // 4 x 36 KB raw + 64 KB tiles
};

template <WeightType T>
struct Smem {
  unsigned char a[2][kTileBytes];                 // weights, wgmma layout, by step parity
  unsigned char b[2][kTileBytes];                 // tokens
  unsigned char w[Fmt<T>::kStages][kRows * Fmt<T>::kRowBytes];
  unsigned char x[Fmt<T>::kStages][kToks * kXRowBytes];
  float2 wsc[2][kStepBlocks][kRows];              // (d', -d' M) per block and row
  float xd[2][kStepBlocks][kToks];                // d_a per block and token
};

// ---------------------------------------------------------------- wgmma

using wgmma::fence_proxy_async;
using wgmma::fence_regs;
using wgmma::smem_desc;
using wgmma::tile_off;

// D = A (64 x 32 s8, K-major) * B (128 x 32 s8, K-major)^T, D's old values ignored (scale-d 0).
__device__ __forceinline__ void wgmma_k32(int (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, "
      "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
        "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
        "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "l"(a), "l"(b), "r"(0)
      : "memory");
}

// As above with B 64 x 32 (m64n64k32).
__device__ __forceinline__ void wgmma_k32(int (&d)[32], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
      : "l"(a), "l"(b), "r"(0)
      : "memory");
}

// ---------------------------------------------------------------- staging

// Start of rows 64 h.. at block kb (32 K bytes) of a tile: the descriptor's start moves inside the
// swizzled row (the hardware applies the swizzle to the full address; tiles are 1024-aligned).
__device__ __forceinline__ int block_off(int h, int kb) { return h * 8192 + kb * 32; }

// Stage `st` (raw) into tiles and scales of parity `p`. Lane l of warp w takes block l / 8 of row /
// token 8 (2w + h) + l % 8, h = 0, 1: a warp's loads of the raw rows (80 / 144 / 144 bytes apart)
// then fall in at most two banks' worth of conflicts, where 32 consecutive rows at one block had
// four. Whether a block's codes start on a word (odd blocks: 18 and 34 are 2 mod 4) is a byte
// permute selector, not a branch.
template <WeightType T>
__device__ __forceinline__ void unpack_step(Smem<T>& sm, int st, int p, int tid) {
  constexpr int kBB = Fmt<T>::kBlockBytes, kRB = Fmt<T>::kRowBytes;
  const int lane = tid % 32, kb = lane / 8;
  const bool odd = kb & 1;
  const unsigned sel = odd ? 0x3210u : 0x5432u;          // odd block: aligned; even: 2 bytes past
  constexpr int kUnits = 512 / kThreads;  // (row, block) units per thread
#pragma unroll
  for (int h = 0; h < kUnits; ++h) {
    const int r = 8 * (kUnits * (tid / 32) + h) + lane % 8;
    const unsigned char* blk = &sm.w[st][r * kRB + kb * kBB];
    const float d = __fmul_rn(qb::f16_bits(*reinterpret_cast<const uint16_t*>(blk)), Fmt<T>::kScaleMul);
    sm.wsc[p][kb][r] = make_float2(d, __fmul_rn(d, -kMagic));  // exact (mmq.cu's header)
    const unsigned* wp = reinterpret_cast<const unsigned*>(blk + 2 - (odd ? 0 : 2));
    // Four code words at a time from five aligned ones (Q8_0 in two halves: fewer live registers).
    const auto words4 = [&](int k0) {
      unsigned u[5];
#pragma unroll
      for (int k = 0; k < 5; ++k) u[k] = wp[k0 + k];
      return make_uint4(__byte_perm(u[0], u[1], sel), __byte_perm(u[1], u[2], sel), __byte_perm(u[2], u[3], sel),
                        __byte_perm(u[3], u[4], sel));
    };
    uint4 lo, hi;
    if constexpr (T == WeightType::Q4_0) {  // word k: elements 4k.. (low nibbles), 16+4k.. (high)
      const uint4 v = words4(0);
      const auto nlo = [](unsigned c) { return ((c << 4) & 0xF0F0F0F0u) ^ 0x80808080u; };  // 16 (n - 8)
      const auto nhi = [](unsigned c) { return (c & 0xF0F0F0F0u) ^ 0x80808080u; };
      lo = make_uint4(nlo(v.x), nlo(v.y), nlo(v.z), nlo(v.w));
      hi = make_uint4(nhi(v.x), nhi(v.y), nhi(v.z), nhi(v.w));
    } else {
      lo = words4(0);
      hi = words4(4);
    }
    *reinterpret_cast<uint4*>(&sm.a[p][tile_off(r, 2 * kb)]) = lo;
    *reinterpret_cast<uint4*>(&sm.a[p][tile_off(r, 2 * kb + 1)]) = hi;

    const unsigned char* xb = &sm.x[st][r * kXRowBytes + kb * 36];
    sm.xd[p][kb][r] = qb::f16_bits(*reinterpret_cast<const uint16_t*>(xb));
    const unsigned* xq = reinterpret_cast<const unsigned*>(xb + 4);
    *reinterpret_cast<uint4*>(&sm.b[p][tile_off(r, 2 * kb)]) = make_uint4(xq[0], xq[1], xq[2], xq[3]);
    *reinterpret_cast<uint4*>(&sm.b[p][tile_off(r, 2 * kb + 1)]) = make_uint4(xq[4], xq[5], xq[6], xq[7]);
  }
}

// ---------------------------------------------------------------- the kernel

template <WeightType T>
__device__ __forceinline__ void issue_block(const Smem<T>& sm, int p, int wr, int wn, int kb, int (&d)[kAcc]) {
  wgmma::fence();  // d was read since the last wgmma that wrote it
  wgmma_k32(d, smem_desc(&sm.a[p][block_off(wr, kb)]), smem_desc(&sm.b[p][block_off(0, kb) + wn * kN * 128]));
  wgmma::commit();
}

// acc += block kb's products, scaled (mmq.cu's update).
template <WeightType T>
__device__ __forceinline__ void scale_block(const Smem<T>& sm, int p, int kb, int row, int tok, int (&d)[kAcc],
                                            float (&acc)[kAcc]) {
  fence_regs(d);
  const float2 s0 = sm.wsc[p][kb][row], s1 = sm.wsc[p][kb][row + 8];
#pragma unroll
  for (int j = 0; j < kN / 8; ++j) {
    const float2 da = *reinterpret_cast<const float2*>(&sm.xd[p][kb][tok + 8 * j]);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float2 s = i ? s1 : s0;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int e = 4 * j + 2 * i + c;
        const float wsum = __fmaf_rn(s.x, __int_as_float(d[e] + kMagicBits), s.y);  // = round(d_w * isum)
        acc[e] = __fmaf_rn(c ? da.y : da.x, wsum, acc[e]);
      }
    }
  }
}

template <WeightType T>
__global__ void __launch_bounds__(kThreads, 1)
    mmq_wgmma_kernel(const uint8_t* __restrict__ w, int64_t n_out, int64_t n_in, const uint8_t* __restrict__ x,
                     int64_t nt, const float* __restrict__ bias, float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int S = Fmt<T>::kStages;
  extern __shared__ __align__(128) unsigned char mmq_wgmma_smem[];
  // The swizzle repeats every 1024 bytes of shared-memory address: align the tiles to it.
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(mmq_wgmma_smem));
  Smem<T>& sm = *reinterpret_cast<Smem<T>*>(mmq_wgmma_smem + ((1024 - (base & 1023)) & 1023));
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int wg = warp / 4, wr = wg % 2, wn = wg / 2, g = lane / 4, q = lane % 4;
  const int row = 64 * wr + 16 * (warp % 4) + g;  // this thread's first row in the CTA's tile (+8 the second)
  const int tok = kN * wn + 2 * q;                // and first token (+1, +8j)
  const Tile ct = cta_tile<Fmt<T>::kBlockBytes>(w, n_out, n_in, x, nt);
  const int64_t steps = ct.steps;
  const auto copy_step = [&](int buf, uint32_t step) {
    issue_step<Fmt<T>::kBlockBytes, Fmt<T>::kRowBytes, kThreads>(ct, sm.w[buf], sm.x[buf], step, tid);
  };

#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < steps) copy_step(st, st);
    cp_async_commit();
  }
  cp_async_wait<S - 2>();
  __syncthreads();
  unpack_step<T>(sm, 0, 0, tid);
  fence_proxy_async();

  float acc[kAcc];
  int d[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e) acc[e] = 0.0f, d[e] = 0;

  for (int64_t i = 0; i < steps; ++i) {
    cp_async_wait<S - 3>();  // this thread's copies of step i+1 have landed
    __syncthreads();         // everyone's; step i's tiles visible to wgmma; step i-1's reads over
    const int p = static_cast<int>(i & 1);
    issue_block(sm, p, wr, wn, 0, d);
    const int64_t next = i + S - 1;
    if (next < steps)
      copy_step(static_cast<int>(next % S), static_cast<uint32_t>(next));
    cp_async_commit();
    if (i + 1 < steps) {
      unpack_step<T>(sm, static_cast<int>((i + 1) % S), p ^ 1, tid);
      fence_proxy_async();
    }
    // One result set per thread: the other warpgroups' wgmma run while this one scales (two sets,
    // block b+1 in flight while b is scaled, measured no faster and spilled: docs/benchmarks.md).
    wgmma::wait<0>();
    scale_block(sm, p, 0, row, tok, d, acc);
#pragma unroll
    for (int kb = 1; kb < kStepBlocks; ++kb) {
      issue_block(sm, p, wr, wn, kb, d);
      wgmma::wait<0>();
      scale_block(sm, p, kb, row, tok, d, acc);
    }
  }
  cp_async_wait<0>();  // no copy outlives the kernel (the trailing groups are empty)

  wgmma::store_d(acc, ct.row0 + row, ct.tok0 + tok, n_out, nt, bias, y);
#else
  __trap();  // built for sm_90a only; mmq_wgmma_applies keeps other devices away
#endif
}

template <WeightType T>
void launch(const void* w, int64_t n_out, int64_t n_in, const void* x, int64_t nt, const float* bias, float* y,
            cudaStream_t s, const char* kernel) {
  constexpr size_t kSmem = sizeof(Smem<T>) + 1024;  // + the alignment of the tiles
  static_assert(kSmem <= 227 * 1024, "one CTA per SM");
  static const bool opted_in = wgmma::allow_smem(reinterpret_cast<const void*>(mmq_wgmma_kernel<T>), kSmem);
  (void)opted_in;
  mmq_wgmma_kernel<T><<<tile_grid(n_out, nt, kernel), kThreads, kSmem, s>>>(
      static_cast<const uint8_t*>(w), n_out, n_in, static_cast<const uint8_t*>(x), nt, bias, y);
  check_launch(kernel, s);
}

}  // namespace

bool mmq_wgmma_applies(WeightType t, int64_t n_in, const void* w, const void* x_q8_1) {
  return tile_applies(t, n_in, w, x_q8_1) &&
         device_is_sm90();
}

void mmq_wgmma(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt,
               const float* bias, float* y, cudaStream_t s) {
  if (!mmq_wgmma_applies(t, n_in, w, x_q8_1)) fail("mmq_wgmma: ", name(t), " x ", n_in, " does not apply");
  if (t == WeightType::Q4_0) launch<WeightType::Q4_0>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_wgmma_kernel<Q4_0>");
  else launch<WeightType::Q8_0>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_wgmma_kernel<Q8_0>");
}

}  // namespace minfer::cuda
