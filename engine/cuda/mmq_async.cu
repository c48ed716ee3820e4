// MMQ for Q4_0 and Q8_0 (mmq_async.h): 128 weight rows x 128 tokens per CTA, one CTA of 8 warps
// per SM. Why a second kernel: in mmq.cu's 128-row tile, 8 loader warps unpack the 18/34-byte blocks through
// registers into int8 tiles; on the H200 they issued ~40 % of the kernel's instructions and the
// math warps stalled at the stage barriers (ncu, docs/benchmarks.md, session 16). Here no warp
// loads through registers:
//   * every thread issues cp.async copies of raw blocks for the step kStages-1 ahead: per weight
//     row the 4 blocks of a K step (Q4_0 72 bytes = 9 x 8, Q8_0 136 = 17 x 8; rows outside the
//     matrix zero-filled), per token its 4 Q8_1 blocks (144 bytes = 9 x 16);
//   * the math warps build the A fragments from the raw codes: a Q4_0 word of 4 code bytes gives
//     two fragment registers (low nibbles: elements 4q.., high: 16+4q..) as 16 * (code - 8) in
//     int8 -- (n ^ 8) << 4 as a signed byte is 16 (n - 8) -- so the mma sums 16 * isum, and the
//     row scale is staged as d / 16 (exact: a power of two); Q8_0 codes are the bytes;
//   * once per K step all threads turn the staged f16 scales into floats (weights: d * kScaleMul
//     and -(that) * kMagic; tokens: d_a), one step ahead, so a math warp reads a row's pair with
//     one 8-byte load.
// The update per accumulator and block is mmq.cu's symmetric one, bit for bit:
//   wsum = fma(d', M + s isum, -d' M) = round(d isum)   (s = 16, d' = d / 16 for Q4_0; 1, d for Q8_0)
//   acc  = fma(d_a, wsum, acc)
// so test_cuda_mmq's emulation holds unchanged. |s isum| <= 32 * 128 * 128 = 2^19 < 2^22.
//
// Pipeline (kStages buffers, one __syncthreads per K step): at the top of step i, step i+1 has
// landed (cp.async.wait_group kStages-3, then the barrier makes every thread's copies visible);
// then copies for step i+kStages-1 go out into the buffer step i-1 used (its reads ended before
// the barrier), step i+1's scales are converted into the scale buffer step i-1 read, and the
// math of step i runs on data and scales that the barrier made visible.
//
// Fragments (PTX ISA, mma.m16n8k32 s8; g = lane / 4, q = lane % 4): a0 = rows g, k 4q..4q+3;
// a1 = rows g+8, same k; a2 / a3 = k 16+4q..; b0 / b1 = token g, k 4q.. / 16+4q..; c0, c1 = row g,
// tokens 2q, 2q+1; c2, c3 = row g+8. Warp w computes rows 32 (w % 4).. (two m16 tiles) x tokens
// 64 (w / 4).. (eight n8 tiles): each A fragment (and its nibble unpacking and scales) serves 8
// mma. Measured on the H200 (7B gate/up, Q4_0, 512 tokens, docs/benchmarks.md, session 17):
// 32 x 32 warp tiles at two CTAs per SM (128 registers, spills) 507 us; one CTA per SM 414 us;
// 32 x 64 warp tiles, one CTA per SM (180-210 registers, no spills) 346 us.
// Shared-memory banks: a weight row is padded to 80 (Q4_0) / 144 (Q8_0) bytes, a token row is
// 144: word (row g, int q) lands in bank 20g + q / 4g + q (mod 32), all 32 lanes apart. A code
// word at an even block of a row starts 2 bytes into a word (18- and 34-byte blocks): two
// aligned loads and a byte permute (the block parity is a compile-time constant).
#include "cuda/mmq_async.h"

#include <bit>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/mmq_raw_copy.cuh"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {

using namespace mmq_raw;  // the tile shape and the raw copies (mmq_raw_copy.cuh)

constexpr int kNT = 8;                           // n8 tiles per warp: 32 x 64 warp tiles
constexpr int kThreads = 256;                     // 8 warps, all of them copy and compute
constexpr int kMagicBits = 0x4B400000;            // f32 bits of kMagic
constexpr float kMagic = 12582912.0f;             // 1.5 * 2^23
static_assert(std::bit_cast<float>(kMagicBits) == kMagic);
static_assert(sizeof(BlockQ8_1) == 36);

template <WeightType T> struct Fmt;
template <> struct Fmt<WeightType::Q4_0> {
  static constexpr int kBlockBytes = 18;
  static constexpr int kRowBytes = 80;            // 72 + 8: rows 20 words apart (banks)
  static constexpr float kScaleMul = 0.0625f;     // the codes are staged as 16 (n - 8)
};
template <> struct Fmt<WeightType::Q8_0> {
  static constexpr int kBlockBytes = 34;
  static constexpr int kRowBytes = 144;           // 136 + 8: rows 36 words apart
  static constexpr float kScaleMul = 1.0f;
};
// Buffers of K steps in flight: Q4_0 6 x 28 KB, Q8_0 5 x 36 KB (one CTA per SM).
template <WeightType T> constexpr int kStagesOf = T == WeightType::Q4_0 ? 6 : 5;

template <WeightType T, int S>
struct Smem {
  unsigned char w[S][kRows * Fmt<T>::kRowBytes];
  unsigned char x[S][kToks * kXRowBytes];
  float2 wsc[2][kStepBlocks][kRows];  // (d', -d' * kMagic) per block and row
  float xd[2][kStepBlocks][kToks];    // d_a per block and token
};

// The f16 scales of buffer `buf` as floats into scale buffer `sb` (one K step).
template <WeightType T, int S>
__device__ __forceinline__ void convert_scales(Smem<T, S>& sm, int buf, int sb, int tid) {
#pragma unroll
  for (int c = tid; c < kRows * kStepBlocks; c += kThreads) {
    const int kb = c / kRows, r = c % kRows;
    const uint16_t h = *reinterpret_cast<const uint16_t*>(&sm.w[buf][r * Fmt<T>::kRowBytes + kb * Fmt<T>::kBlockBytes]);
    const float d = __fmul_rn(qb::f16_bits(h), Fmt<T>::kScaleMul);  // exact: a power of two
    sm.wsc[sb][kb][r] = make_float2(d, __fmul_rn(d, -kMagic));      // exact (mmq.cu's header)
  }
  for (int c = tid; c < kToks * kStepBlocks; c += kThreads) {
    const int kb = c / kToks, t = c % kToks;
    sm.xd[sb][kb][t] = qb::f16_bits(*reinterpret_cast<const uint16_t*>(&sm.x[buf][t * kXRowBytes + kb * 36]));
  }
}

// ---------------------------------------------------------------- fragments and the mma

// The little-endian word at p, which is 4-byte aligned (kAligned) or 2 bytes past a word.
template <bool kAligned>
__device__ __forceinline__ int load_word(const unsigned char* p) {
  if constexpr (kAligned) return *reinterpret_cast<const int*>(p);
  else {
    const unsigned lo = *reinterpret_cast<const unsigned*>(p - 2), hi = *reinterpret_cast<const unsigned*>(p + 2);
    return static_cast<int>(__byte_perm(lo, hi, 0x5432));
  }
}
// Q4_0 code bytes n (0..15) as int8 16 (n - 8): low nibbles, high nibbles.
__device__ __forceinline__ int nib_lo16(int v) {
  return static_cast<int>(((static_cast<unsigned>(v) << 4) & 0xF0F0F0F0u) ^ 0x80808080u);
}
__device__ __forceinline__ int nib_hi16(int v) { return static_cast<int>((static_cast<unsigned>(v) & 0xF0F0F0F0u) ^ 0x80808080u); }

// D = A (16x32 s8) * B (32x8 s8) + C, C = kMagicBits in every element.
__device__ __forceinline__ void mma_k32(int (&d)[4], const int (&a)[4], int b0, int b1) {
  const int c = kMagicBits;
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c), "r"(c), "r"(c), "r"(c));
}

// One 32-block kb = 2p + kOdd of buffer `buf` (scales in `sb`) for this warp's 32 x 32 tile.
template <WeightType T, int kOdd, int S>
__device__ __forceinline__ void block_math(const Smem<T, S>& sm, int buf, int sb, int p, int wr, int wn, int g,
                                           int q, float (&acc)[2][kNT][4]) {
  constexpr int kBB = Fmt<T>::kBlockBytes, kRB = Fmt<T>::kRowBytes;
  // The codes start 2 bytes into the block: word-aligned in odd blocks (18 and 34 are 2 mod 4).
  constexpr bool kAligned = (kOdd * kBB + 2) % 4 == 0;
  const int kb = 2 * p + kOdd;
  int a[2][4];
  float2 sc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int r = 32 * wr + 16 * i + 8 * hi + g;
      const unsigned char* codes = &sm.w[buf][r * kRB + kb * kBB + 2];
      if constexpr (T == WeightType::Q4_0) {
        const int v = load_word<kAligned>(codes + 4 * q);
        a[i][hi] = nib_lo16(v);      // elements 4q..4q+3
        a[i][2 + hi] = nib_hi16(v);  // elements 16+4q..
      } else {
        a[i][hi] = load_word<kAligned>(codes + 4 * q);
        a[i][2 + hi] = load_word<kAligned>(codes + 16 + 4 * q);
      }
      sc[i][hi] = sm.wsc[sb][kb][r];
    }
  }
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int tb = 8 * kNT * wn + 8 * j;
    const unsigned char* xc = &sm.x[buf][(tb + g) * kXRowBytes + kb * 36 + 4];
    const int b0 = *reinterpret_cast<const int*>(xc + 4 * q), b1 = *reinterpret_cast<const int*>(xc + 16 + 4 * q);
    const float2 da = *reinterpret_cast<const float2*>(&sm.xd[sb][kb][tb + 2 * q]);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      int d[4];
      mma_k32(d, a[i], b0, b1);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float2 s = sc[i][c / 2];
        const float wsum = __fmaf_rn(s.x, __int_as_float(d[c]), s.y);  // = round(d_w * isum)
        acc[i][j][c] = __fmaf_rn(c % 2 ? da.y : da.x, wsum, acc[i][j][c]);
      }
    }
  }
}

template <WeightType T>
__global__ void __launch_bounds__(kThreads, 1)
    mmq_async_kernel(const uint8_t* __restrict__ w, int64_t n_out, int64_t n_in, const uint8_t* __restrict__ x,
                     int64_t nt, const float* __restrict__ bias, float* __restrict__ y) {
  constexpr int S = kStagesOf<T>;
  extern __shared__ __align__(16) unsigned char mmq_async_smem[];
  Smem<T, S>& sm = *reinterpret_cast<Smem<T, S>*>(mmq_async_smem);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4, wr = warp % 4, wn = warp / 4;
  const Tile ct = cta_tile<Fmt<T>::kBlockBytes>(w, n_out, n_in, x, nt);
  const int64_t steps = ct.steps;
  const auto copy_step = [&](int buf, uint32_t step) {
    issue_step<Fmt<T>::kBlockBytes, Fmt<T>::kRowBytes, kThreads>(ct, sm.w[buf], sm.x[buf], step, tid);
  };

  // Prologue: steps 0 .. S-2 in flight, step 0's scales converted.
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < steps) copy_step(st, st);
    cp_async_commit();
  }
  cp_async_wait<S - 2>();
  __syncthreads();
  convert_scales<T>(sm, 0, 0, tid);

  float acc[2][kNT][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < kNT; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

  for (int64_t i = 0; i < steps; ++i) {
    cp_async_wait<S - 3>();  // this thread's copies of step i+1 have landed
    __syncthreads();         // everyone's have; step i-1's reads are over; step i's scales visible
    const int64_t next = i + S - 1;
    if (next < steps)
      copy_step(static_cast<int>(next % S), static_cast<uint32_t>(next));
    cp_async_commit();
    if (i + 1 < steps) convert_scales<T>(sm, static_cast<int>((i + 1) % S), static_cast<int>((i + 1) % 2), tid);
    const int buf = static_cast<int>(i % S), sb = static_cast<int>(i % 2);
#pragma unroll 1
    for (int p = 0; p < kStepBlocks / 2; ++p) {  // an even and an odd block (unrolling all 4 spills more)
      block_math<T, 0>(sm, buf, sb, p, wr, wn, g, q, acc);
      block_math<T, 1>(sm, buf, sb, p, wr, wn, g, q, acc);
    }
  }
  cp_async_wait<0>();  // no copy outlives the kernel (the trailing groups are empty)

#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int64_t row = ct.row0 + 32 * wr + 16 * i + 8 * hi + g;
      if (row >= n_out) continue;
      const float bv = bias ? bias[row] : 0.0f;
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int64_t tok = ct.tok0 + 8 * kNT * wn + 8 * j + 2 * q + e;
          if (tok < nt) y[tok * n_out + row] = __fadd_rn(acc[i][j][2 * hi + e], bv);
        }
    }
}

template <WeightType T>
void launch(const void* w, int64_t n_out, int64_t n_in, const void* x, int64_t nt, const float* bias, float* y,
            cudaStream_t s, const char* kernel) {
  constexpr size_t kSmem = sizeof(Smem<T, kStagesOf<T>>);
  static_assert(kSmem <= 220 * 1024, "one CTA per SM");
  static const bool opted_in = [] {  // above 48 KB a kernel must opt in (once per instantiation)
    CUDA_CHECK(cudaFuncSetAttribute(mmq_async_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSmem)));
    CUDA_CHECK(cudaFuncSetAttribute(mmq_async_kernel<T>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    static_cast<int>(cudaSharedmemCarveoutMaxShared)));
    return true;
  }();
  (void)opted_in;
  mmq_async_kernel<T><<<tile_grid(n_out, nt, kernel), kThreads, kSmem, s>>>(
      static_cast<const uint8_t*>(w), n_out, n_in, static_cast<const uint8_t*>(x), nt, bias, y);
  check_launch(kernel, s);
}

}  // namespace

bool mmq_async_applies(WeightType t, int64_t n_in, const void* w, const void* x_q8_1) {
  return tile_applies(t, n_in, w, x_q8_1);
}

void mmq_async(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt,
               const float* bias, float* y, cudaStream_t s) {
  if (!mmq_async_applies(t, n_in, w, x_q8_1)) fail("mmq_async: ", name(t), " x ", n_in, " does not apply");
  if (t == WeightType::Q4_0) launch<WeightType::Q4_0>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_async_kernel<Q4_0>");
  else launch<WeightType::Q8_0>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_async_kernel<Q8_0>");
}

}  // namespace minfer::cuda
