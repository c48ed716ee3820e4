// matmul_dequant (matmul_dequant.h): 128 weight rows x 128 tokens per CTA, one CTA per SM, two
// warpgroups of 64 rows each. Per K step of 128 elements (4 weight blocks):
//   * kStages - 1 steps ahead: each warp copies the raw blocks of its own 16 rows into a staging
//     buffer by cp.async, and one thread has the TMA copy the tokens' f16 values into the B tile of
//     that stage (two boxes of 128 tokens x 64, 128-byte swizzle), completing the stage's "full"
//     mbarrier; a stage is reused once every warp has arrived on its "empty" mbarrier;
//   * each thread dequantizes its two rows' blocks from the raw copy straight into wgmma's A
//     fragment registers -- round(d * (q - 8)) for Q4_0, round(d * q) for Q8_0, the f32 value
//     dequant.cu forms rounded to f16 for Q4_K and Q6_K (a step is half a super-block there) --
//     one step ahead, while the current step's MMAs run: the weights never pass through a shared
//     f16 tile, and a warp's dequantization waits only for its own copies;
//   * each warpgroup issues 8 wgmma m64n128k16 with A from registers and B from the stage (f32
//     accumulators kept across all of K).
// No barrier across the CTA inside the loop: the warpgroups meet only at the stages' mbarriers.
// A fragment (PTX ISA, wgmma register fragment for A, f16, m64k16; as mma.m16n8k16's): warp w of
// the warpgroup holds rows 16w..16w+15; with g = lane/4, q = lane%4 its four registers are
// (row g, K 2q..2q+1), (row g+8, 2q..), (row g, 2q+8..2q+9), (row g+8, 2q+8..). A 32-block is two
// K slices: Q4_0's code byte j holds element j (low nibble) and j + 16 (high), so a thread reads
// code bytes 2q, 2q+1, 2q+8, 2q+9 of each of its rows' blocks and nothing else.
// Accumulator layout (PTX ISA, wgmma D fragments for m64nN): element e = 4j + 2i + c is row
// 16w + g + 8i, token 8j + 2q + c.
#include "cuda/matmul_dequant.h"

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/mmq_raw_copy.cuh"
#include "cuda/tma_sm90a.cuh"
#include "cuda/wgmma_sm90a.cuh"

namespace minfer::cuda {
namespace {

using mmq_raw::kRows;
using mmq_raw::kStepBlocks;
using mmq_raw::kToks;

constexpr int kThreads = 256;
constexpr int kAcc = 64;                    // f32 results per thread (m64n128 over 128 threads)
constexpr int kHalfTile = 128 * 128;        // 128 tokens x 64 f16 (one 128-byte row each): 16 KB
constexpr int kSlices = 2 * kStepBlocks;    // K slices of 16 per step

template <WeightType T> struct Fmt;
template <> struct Fmt<WeightType::Q4_0> {
  static constexpr int kBlockBytes = 18, kBlockElems = 32;
  static constexpr int kRowBytes = 72;      // rows 18 words apart: no bank conflicts
  static constexpr int kStages = 5;         // 5 x (32 KB + 9 KB)
};
template <> struct Fmt<WeightType::Q8_0> {
  static constexpr int kBlockBytes = 34, kBlockElems = 32;
  static constexpr int kRowBytes = 136;     // 34 words apart: no bank conflicts
  static constexpr int kStages = 4;         // 4 x (32 KB + 17 KB)
};
// K-quants: a K step is half a super-block; kChunks 8-byte copies per row and step (chunk_src).
template <> struct Fmt<WeightType::Q4_K> {
  static constexpr int kBlockBytes = 144, kBlockElems = 256, kChunks = 10;
  static constexpr int kRowBytes = 80;      // 20 words apart: no bank conflicts
  static constexpr int kStages = 5;         // 5 x (32 KB + 10 KB)
};
template <> struct Fmt<WeightType::Q6_K> {
  static constexpr int kBlockBytes = 210, kBlockElems = 256, kChunks = 17;
  static constexpr int kRowBytes = 136;
  static constexpr int kStages = 4;         // 4 x (32 KB + 17 KB)
};

template <WeightType T>
struct Smem {
  unsigned char b[Fmt<T>::kStages][2][kHalfTile];  // tokens as f16 by stage, K halves
  unsigned char w[Fmt<T>::kStages][kRows * Fmt<T>::kRowBytes];
  alignas(8) uint64_t full[Fmt<T>::kStages];   // a stage's token tile has landed (the TMA's bytes)
  alignas(8) uint64_t empty[Fmt<T>::kStages];  // every warp is done with a stage's token tile
};

// A step's A fragments: 4 registers (8 f16) per K slice.
using AFrag = unsigned[kSlices][4];

// D += A (64 x 16 f16, registers) * B (128 x 16 f16, K-major in shared memory)^T, f32 accumulators.
__device__ __forceinline__ void wgmma_k16(float (&d)[kAcc], const unsigned (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, "
      "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b)
      : "memory");
}

// ---------------------------------------------------------------- copies

// Tokens tok0.. of K step `step`, as two boxes of 128 tokens x 64 f16 (one per K half): the TMA's
// 128-byte swizzle is wgmma's, and it writes zeros past the last token. Completes `bar`.
__device__ __forceinline__ void tma_x_step(const CUtensorMap* map, unsigned char (*b)[kHalfTile], uint64_t* bar,
                                           int32_t step, int32_t tok0) {
#pragma unroll
  for (int h = 0; h < 2; ++h) tma::load_box(b[h], map, step * 128 + 64 * h, tok0, bar);
}

// A K step's raw bytes of one K-quant row, as Fmt<T>::kChunks 8-byte copies from super-block
// `blk`, step half h: where chunk k comes from and how many of its bytes are the block's (n; the
// rest is zero-filled).
//   Q4_K (d, dmin, scales[12], qs[128]): the 16-byte header and the 64 code bytes of groups 2h,
//     2h + 1, staged as [0, 16) header, [16, 80) codes.
//   Q6_K (ql[128], qh[64], scales[16], d): ql[64h..], qh[32h..], scales[8h..] and d. A 210-byte
//     block is only 2-byte aligned, so each range is copied from m = blk % 8 bytes before it (w is
//     8-byte aligned, so that stays inside the matrix): staged byte m + i is byte i of the range, at
//     [0, 72) ql, [72, 112) qh, [112, 136) scales and d. The copy holding d also spans up to 6
//     bytes of the next block (n < 8: zero-filled); copy_rows reads the matrix's last block's tail
//     by plain loads instead, since cp.async reads all 8 bytes (compute-sanitizer memcheck).
template <WeightType T>
__device__ __forceinline__ const uint8_t* chunk_src(const uint8_t* blk, int h, int k, int& n) {
  if constexpr (T == WeightType::Q4_K) {
    n = 8;
    return blk + (k < 2 ? 8 * k : 16 + 64 * h + 8 * (k - 2));
  } else {
    const int m = static_cast<int>(reinterpret_cast<uintptr_t>(blk) & 7u);
    int rel = k < 9 ? 64 * h + 8 * k : k < 14 ? 128 + 32 * h + 8 * (k - 9) : 192 + 8 * h + 8 * (k - 14);
    n = min(8, 210 + m - rel);
    if (n <= 0) n = 0, rel = 0;
    return blk - m + rel;
  }
}

// K step `step` of the warp's 16 rows (row0..) into the stage's raw buffer, by its 32 lanes;
// ends_matrix: the tile holds the matrix's last row.
template <WeightType T>
__device__ __forceinline__ void copy_rows(const mmq_raw::Tile& ct, unsigned char* dst_p, uint32_t step, int lane,
                                          int row0, bool ends_matrix) {
  constexpr int kRB = Fmt<T>::kRowBytes;
  if constexpr (Fmt<T>::kBlockElems == 32) {
    mmq_raw::issue_w_step<Fmt<T>::kBlockBytes, kRB, 32, 16>(ct, dst_p, step, lane, row0);
  } else {
    constexpr int kC = Fmt<T>::kChunks;
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(dst_p));
    const uint32_t blk_off = (step / 2) * Fmt<T>::kBlockBytes;
    const int h = static_cast<int>(step & 1);
#pragma unroll
    for (int c0 = 0; c0 < 16 * kC; c0 += 32) {
      const int c = c0 + lane;
      if (16 * kC % 32 != 0 && c >= 16 * kC) break;
      const int r = row0 + c / kC, k = c % kC;
      const bool ok = r < ct.n_rows;
      int n;
      const uint8_t* src = chunk_src<T>(ct.w + ((ok ? r : 0) * ct.row_bytes + blk_off), h, k, n);
      if (n > 0 && n < 8 && ends_matrix && r == ct.n_rows - 1 && step + 2 >= static_cast<uint32_t>(ct.steps)) {
        // The matrix's last bytes (even n: 2-byte loads); the warp's __syncwarp before the
        // dequantization orders these stores as it does the copies.
        unsigned short* d16 = reinterpret_cast<unsigned short*>(dst_p + r * kRB + 8 * k);
#pragma unroll
        for (int b = 0; b < 4; ++b) d16[b] = 2 * b < n ? reinterpret_cast<const unsigned short*>(src)[b] : 0;
      } else {
        mmq_raw::cp_async8_part(dst + r * kRB + 8 * k, src, ok ? n : 0);
      }
    }
  }
}

// ---------------------------------------------------------------- dequantization

__device__ __forceinline__ unsigned h2_bits(__half2 h) { return *reinterpret_cast<unsigned*>(&h); }
__device__ __forceinline__ __half2 bits_h2(unsigned u) { return *reinterpret_cast<__half2*>(&u); }

// Two codes c0, c1 (as 1024 + c0, 1024 + c1 in the f16 halves of `biased`) to round(d * (c - off)).
__device__ __forceinline__ unsigned dq_pair(unsigned biased, __half2 off, __half2 d) {
  return h2_bits(__hmul2(__hsub2(bits_h2(biased), off), d));  // the subtraction is exact
}

// Code bytes o, o+1, o+8, o+9 of a block (o even: two aligned 16-bit loads) as one word.
__device__ __forceinline__ unsigned code_bytes(const unsigned char* codes, int o) {
  const unsigned lo = *reinterpret_cast<const unsigned short*>(codes + o);
  const unsigned hi = *reinterpret_cast<const unsigned short*>(codes + o + 8);
  return lo | (hi << 16);
}

// Block kb of raw row `rb` (this thread's row h = 0, or its row + 8 for h = 1) into the A
// registers of K slices 2 kb and 2 kb + 1.
template <WeightType T>
__device__ __forceinline__ void dequant_block(const unsigned char* rb, int kb, int h, int q, AFrag& a) {
  const unsigned char* blk = rb + kb * Fmt<T>::kBlockBytes;
  const __half2 d = __half2half2(*reinterpret_cast<const __half*>(blk));
  const unsigned char* codes = blk + 2;
  if constexpr (T == WeightType::Q4_0) {
    // Low nibbles are elements 2q.. of the block (slice 2 kb), high ones 16 + 2q.. (slice 2 kb + 1).
    // 0x6400 | n is f16 1024 + n.
    const __half2 off = __float2half2_rn(1032.0f);
    const unsigned u = code_bytes(codes, 2 * q), v = u >> 4;
    a[2 * kb][h] = dq_pair((__byte_perm(u, 0, 0x4140) & 0x000F000Fu) | 0x64006400u, off, d);
    a[2 * kb][2 + h] = dq_pair((__byte_perm(u, 0, 0x4342) & 0x000F000Fu) | 0x64006400u, off, d);
    a[2 * kb + 1][h] = dq_pair((__byte_perm(v, 0, 0x4140) & 0x000F000Fu) | 0x64006400u, off, d);
    a[2 * kb + 1][2 + h] = dq_pair((__byte_perm(v, 0, 0x4342) & 0x000F000Fu) | 0x64006400u, off, d);
  } else {
    // Signed bytes; b ^ 0x80 = b + 128, so 0x6400 | (b ^ 0x80) is f16 1152 + b.
    const __half2 off = __float2half2_rn(1152.0f);
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const unsigned u = code_bytes(codes, 16 * s + 2 * q) ^ 0x80808080u;
      a[2 * kb + s][h] = dq_pair(__byte_perm(u, 0x64646464u, 0x4140), off, d);
      a[2 * kb + s][2 + h] = dq_pair(__byte_perm(u, 0x64646464u, 0x4342), off, d);
    }
  }
}

// Byte b of x as the float 2^23 + byte (an exact integer-to-float conversion in one byte permute:
// I2F issues at a quarter of the FMA rate).
constexpr float kTwo23 = 8388608.0f;
template <int b>
__device__ __forceinline__ float magic_byte(unsigned x) {
  return __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7540 | b));
}
// f16 bits of (v0, v1), v0 in the low half (the lower K).
__device__ __forceinline__ unsigned pack_h2(float v0, float v1) { return h2_bits(__floats2half2_rn(v0, v1)); }

// Register pair (h, 2 + h) of slice kk from four values (K 2q, 2q+1, 2q+8, 2q+9).
__device__ __forceinline__ void put_slice(AFrag& a, int kk, int h, const float (&v)[4]) {
  a[kk][h] = pack_h2(v[0], v[1]);
  a[kk][2 + h] = pack_h2(v[2], v[3]);
}

// Q4_K: step half `half` of a super-block is sub-blocks 4 half + j (j < 4), slice kk in sub-block
// j = kk / 2: group kk / 4's code bytes 16 (kk % 2) + 2q.., nibble j % 2. dequant.cu's value,
// (d sc_j) c - dmin m_j with f32 rounding, via the exact d1 c = fma(d1, 2^23 + c, -2^23 d1).
__device__ __forceinline__ void dequant_q4_k_row(const unsigned char* rb, int h, int q, int half, AFrag& a) {
  const float d = __half2float(*reinterpret_cast<const __half*>(rb));
  const float dmin = __half2float(*reinterpret_cast<const __half*>(rb + 2));
  const unsigned* sw = reinterpret_cast<const unsigned*>(rb + 4);
  const unsigned w0 = sw[0], w1 = sw[1], w2 = sw[2];
  // Byte j: the six-bit scale / min of sub-block 4 half + j (blocks.h's get_scale_min_k4).
  const unsigned sc = half ? (w2 & 0x0F0F0F0Fu) | ((w0 >> 2) & 0x30303030u) : w0 & 0x3F3F3F3Fu;
  const unsigned mn = half ? ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 2) & 0x30303030u) : w1 & 0x3F3F3F3Fu;
  const float scf[4] = {magic_byte<0>(sc), magic_byte<1>(sc), magic_byte<2>(sc), magic_byte<3>(sc)};
  const float mnf[4] = {magic_byte<0>(mn), magic_byte<1>(mn), magic_byte<2>(mn), magic_byte<3>(mn)};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float d1 = __fmul_rn(d, __fsub_rn(scf[j], kTwo23));
    const float m1 = __fmul_rn(dmin, __fsub_rn(mnf[j], kTwo23));
    const float off = -kTwo23 * d1;  // exact
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int kk = 2 * j + s;
      const unsigned n = (code_bytes(rb + 16, 32 * (j / 2) + 16 * s + 2 * q) >> (4 * (j % 2))) & 0x0F0F0F0Fu;
      const float v[4] = {__fsub_rn(__fmaf_rn(d1, magic_byte<0>(n), off), m1),
                          __fsub_rn(__fmaf_rn(d1, magic_byte<1>(n), off), m1),
                          __fsub_rn(__fmaf_rn(d1, magic_byte<2>(n), off), m1),
                          __fsub_rn(__fmaf_rn(d1, magic_byte<3>(n), off), m1)};
      put_slice(a, kk, h, v);
    }
  }
}

// Q6_K: in step half `half`, slice kk is quarter qr = kk / 2, elements l = 16 (kk % 2) + 2q..: low
// bits in ql[32 (qr % 2) + l] (nibble qr / 2), high two at bit 2 qr of qh[l], scale kk. The staged
// ranges start m bytes in (chunk_src). dequant.cu's value (d sc) (c - 32).
__device__ __forceinline__ void dequant_q6_k_row(const unsigned char* rb, int m, int h, int q, int half, AFrag& a) {
  const unsigned char* ql = rb + m;
  const unsigned char* qh = rb + 72 + m;
  const unsigned char* scb = rb + 112 + m;
  const float d = __half2float(*reinterpret_cast<const __half*>(scb + 16 - 8 * half));
  const unsigned short* s16 = reinterpret_cast<const unsigned short*>(scb);  // m is even
  // Signed scale bytes + 128 (b ^ 0x80), so the magic float minus 2^23 + 128 is the scale.
  const unsigned sw[2] = {(s16[0] | (unsigned{s16[1]} << 16)) ^ 0x80808080u,
                          (s16[2] | (unsigned{s16[3]} << 16)) ^ 0x80808080u};
#pragma unroll
  for (int kk = 0; kk < kSlices; ++kk) {
    const int qr = kk / 2, s = kk % 2;
    const unsigned w = sw[kk / 4];
    const float scf = (kk % 4 == 0) ? magic_byte<0>(w) : (kk % 4 == 1) ? magic_byte<1>(w)
                    : (kk % 4 == 2) ? magic_byte<2>(w) : magic_byte<3>(w);
    const float dl = __fmul_rn(d, __fsub_rn(scf, kTwo23 + 128.0f));
    const unsigned lo = (code_bytes(ql, 32 * (qr % 2) + 16 * s + 2 * q) >> (4 * (qr / 2))) & 0x0F0F0F0Fu;
    const unsigned hi = ((code_bytes(qh, 16 * s + 2 * q) >> (2 * qr)) << 4) & 0x30303030u;
    const unsigned c = lo | hi;
    constexpr float kBias = kTwo23 + 32.0f;  // 2^23 + c - kBias = c - 32, exact
    const float v[4] = {__fmul_rn(dl, __fsub_rn(magic_byte<0>(c), kBias)),
                        __fmul_rn(dl, __fsub_rn(magic_byte<1>(c), kBias)),
                        __fmul_rn(dl, __fsub_rn(magic_byte<2>(c), kBias)),
                        __fmul_rn(dl, __fsub_rn(magic_byte<3>(c), kBias))};
    put_slice(a, kk, h, v);
  }
}

// This thread's two rows (`row`, row + 8 of the CTA's tile) of K step `step`, raw in stage `st`,
// into `a`.
template <WeightType T>
__device__ __forceinline__ void dequant_step(const Smem<T>& sm, int st, int row, int q, const mmq_raw::Tile& ct,
                                             int64_t step, AFrag& a) {
  constexpr int kRB = Fmt<T>::kRowBytes;
  const int half = static_cast<int>(step & 1);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned char* rb = &sm.w[st][(row + 8 * h) * kRB];
    if constexpr (T == WeightType::Q4_K) {
      dequant_q4_k_row(rb, h, q, half, a);
    } else if constexpr (T == WeightType::Q6_K) {
      // Where chunk_src's ranges start: the super-block's address mod 8 (32-bit: only 3 bits matter).
      const uint32_t blk = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(ct.w)) +
                           static_cast<uint32_t>(row + 8 * h) * ct.row_bytes +
                           static_cast<uint32_t>(step / 2) * Fmt<T>::kBlockBytes;
      dequant_q6_k_row(rb, static_cast<int>(blk & 7u), h, q, half, a);
    } else {
#pragma unroll
      for (int kb = 0; kb < kStepBlocks; ++kb) dequant_block<T>(rb, kb, h, q, a);
    }
  }
}

// ---------------------------------------------------------------- the kernel

template <WeightType T>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_dequant_kernel(const uint8_t* __restrict__ w, int64_t n_out, int64_t n_in,
                          const __grid_constant__ CUtensorMap x_map, int64_t nt, const float* __restrict__ bias,
                          float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int S = Fmt<T>::kStages;
  extern __shared__ __align__(128) unsigned char matmul_dequant_smem[];
  // The swizzle repeats every 1024 bytes of shared-memory address: align the tiles to it.
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(matmul_dequant_smem));
  Smem<T>& sm = *reinterpret_cast<Smem<T>*>(matmul_dequant_smem + ((1024 - (base & 1023)) & 1023));
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int wr = warp / 4, g = lane / 4, q = lane % 4;
  const int row = 64 * wr + 16 * (warp % 4) + g;  // this thread's first row in the CTA's tile (+8 the second)
  const mmq_raw::Tile ct =
      mmq_raw::cta_tile<Fmt<T>::kBlockBytes, Fmt<T>::kBlockElems>(w, n_out, n_in, nullptr, nt);  // no Q8_1 view of x
  const int64_t steps = ct.steps;
  const bool ends_matrix = ct.row0 + ct.n_rows == n_out;
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      tma::mbar_init(&sm.full[s], 1);               // the producer's expect_tx
      tma::mbar_init(&sm.empty[s], kThreads / 32);  // a lane of every warp
    }
    tma::fence_mbar_init();
  }
  __syncthreads();
  // Step `step` into stage step % S: the token tile by one thread's TMA once every warp has
  // released the stage (its use S steps before), each warp's own raw rows by cp.async.
  const auto copy_step = [&](int64_t step) {
    const int buf = static_cast<int>(step % S);
    if (step < steps) {
      if (tid == 0) {
        if (step >= S) tma::mbar_wait(&sm.empty[buf], static_cast<unsigned>((step / S - 1) & 1));
        tma::mbar_expect_tx(&sm.full[buf], 2 * kHalfTile);
        tma_x_step(&x_map, sm.b[buf], &sm.full[buf], static_cast<int32_t>(step), static_cast<int32_t>(ct.tok0));
      }
      // The warp's own 16 rows: the rows its threads dequantize, so it waits for no other warp.
      copy_rows<T>(ct, sm.w[buf], static_cast<uint32_t>(step), lane, 16 * warp, ends_matrix);
    }
    mmq_raw::cp_async_commit();  // a group per step, empty past the last, so the wait counts hold
  };

  for (int st = 0; st < S - 1; ++st) copy_step(st);

  float acc[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e) acc[e] = 0.0f;
  AFrag a0, a1;
  mmq_raw::cp_async_wait<S - 2>();  // step 0's raw rows (the warp's own copies)
  __syncwarp();
  dequant_step<T>(sm, 0, row, q, ct, 0, a0);

  // Step i, its A registers `a` dequantized by the step before; step i + 1's go to `next` while
  // step i's MMAs run. ptxas keeps the MMAs pipelined only if no instruction writes a register
  // that a wgmma of the same unretired group reads: hence the wait for all of them (wait<0>)
  // before the next step's MMAs, and the two register sets (the loop is unrolled by two). No
  // barrier across the CTA: the warpgroups meet only at the stages' mbarriers.
  const auto step_body = [&](int64_t i, AFrag& a, AFrag& next) {
    const int sb = static_cast<int>(i % S);
    tma::mbar_wait(&sm.full[sb], static_cast<unsigned>((i / S) & 1));  // step i's token tile
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kSlices; ++kk)  // K slice kk: half kk / 4, 32 bytes into the token rows each
      wgmma_k16(acc, a[kk], wgmma::smem_desc(&sm.b[sb][kk / 4][(kk % 4) * 32]));
    wgmma::commit();
    copy_step(i + S - 1);  // into step i - 1's stage, once this warpgroup's MMAs are queued
    if (i + 1 < steps) {
      mmq_raw::cp_async_wait<S - 2>();  // step i + 1's raw rows (the warp's own copies)
      __syncwarp();
      dequant_step<T>(sm, static_cast<int>((i + 1) % S), row, q, ct, i + 1, next);
    }
    wgmma::wait<0>();
    wgmma::fence_regs(acc);
    __syncwarp();
    if (lane == 0) tma::mbar_arrive(&sm.empty[sb]);  // this warp is done with stage sb
  };
  for (int64_t i = 0; i < steps; i += 2) {
    step_body(i, a0, a1);
    if (i + 1 < steps) step_body(i + 1, a1, a0);
  }
  wgmma::wait<0>();
  wgmma::fence_regs(acc);
  mmq_raw::cp_async_wait<0>();  // no copy outlives the kernel (the trailing groups are empty)

  wgmma::store_d(acc, ct.row0 + row, ct.tok0 + 2 * q, n_out, nt, bias, y);
#else
  __trap();  // built for sm_90a only; matmul_dequant_applies keeps other devices away
#endif
}

template <WeightType T>
void launch(const void* w, int64_t n_out, int64_t n_in, const __half* x, int64_t nt, const float* bias, float* y,
            cudaStream_t s, const char* kernel) {
  constexpr size_t kSmem = sizeof(Smem<T>) + 1024;  // + the alignment of the tiles
  static_assert(kSmem <= 227 * 1024, "one CTA per SM");
  static const bool opted_in = wgmma::allow_smem(reinterpret_cast<const void*>(matmul_dequant_kernel<T>), kSmem);
  (void)opted_in;
  matmul_dequant_kernel<T><<<mmq_raw::tile_grid(n_out, nt, kernel), kThreads, kSmem, s>>>(
      static_cast<const uint8_t*>(w), n_out, n_in, tma::f16_map_128b(x, nt, n_in, kToks, kernel), nt, bias, y);
  check_launch(kernel, s);
}

}  // namespace

bool matmul_dequant_applies(WeightType t, int64_t n_in, const void* w) {
  const bool legacy = t == WeightType::Q4_0 || t == WeightType::Q8_0;
  if (!legacy && t != WeightType::Q4_K && t != WeightType::Q6_K) return false;
  const int64_t whole = legacy ? mmq_raw::kStepElems : 256;  // K steps of 128; K-quant rows of whole super-blocks
  return n_in > 0 && n_in % whole == 0 && n_in <= (int64_t{1} << 24) &&
         (reinterpret_cast<uintptr_t>(w) & 7u) == 0 && device_is_sm90();  // x: checked by matmul_dequant
}

void matmul_dequant(WeightType t, const void* w, int64_t n_out, int64_t n_in, const __half* x, int64_t nt,
                    const float* bias, float* y, cudaStream_t s) {
  if (!matmul_dequant_applies(t, n_in, w))
    fail("matmul_dequant: ", name(t), " x ", n_in,
         " does not apply (Q4_0 or Q8_0 with n_in a multiple of 128, Q4_K or Q6_K; w 8-byte aligned; sm_90)");
  if ((reinterpret_cast<uintptr_t>(x) & 15u) != 0) fail("matmul_dequant: x is not 16-byte aligned");
  if (n_out <= 0 || nt <= 0) fail("matmul_dequant: empty shape ", nt, " x ", n_in, " . ", n_out);
  switch (t) {
    case WeightType::Q4_0: return launch<WeightType::Q4_0>(w, n_out, n_in, x, nt, bias, y, s, "matmul_dequant_kernel<Q4_0>");
    case WeightType::Q8_0: return launch<WeightType::Q8_0>(w, n_out, n_in, x, nt, bias, y, s, "matmul_dequant_kernel<Q8_0>");
    case WeightType::Q4_K: return launch<WeightType::Q4_K>(w, n_out, n_in, x, nt, bias, y, s, "matmul_dequant_kernel<Q4_K>");
    default: return launch<WeightType::Q6_K>(w, n_out, n_in, x, nt, bias, y, s, "matmul_dequant_kernel<Q6_K>");
  }
}

}  // namespace minfer::cuda
