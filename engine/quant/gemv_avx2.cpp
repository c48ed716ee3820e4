// Decode GEMV (one Q8_0 activation row against many weight rows) for Q4_0 / Q8_0 weights.
// vec_dot per row redid per-activation work for every weight row and spent more instructions
// on scales than on the integer dots. Here the activation row is rearranged once per call
// ("prep"): its codes in the order the weight unpack produces, its f32 scales, and the weight
// offset's correction (-8 * sum(a) for Q4_0's unsigned nibbles, -128 * sum(a) for Q8_0 codes
// biased to unsigned) stored as the integer dot's starting accumulator, so it costs nothing.
// Four weight rows share each activation load; weight scales come from a f16 -> f32 table
// (two loads, no vector ALU work). Same arithmetic as the scalar dots: exact integer sums per
// block, then one float multiply-add per block; only the float rounding order differs.
#include "quant/quant_impl.h"
#include "quant/vec_dot_paths.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <vector>

#include "core/fp16.h"
#include "quant/avx2_helpers.h"

namespace minfer {
namespace {
using avx2::dot_u8s8;
using avx2::hsum;
using avx2::kVnni;

// Every f16 bit pattern as f32 (256 KiB; a matrix's scales touch a few hundred entries).
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    const __m128i step = _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7);
    for (int i = 0; i < 65536; i += 8)
      _mm256_storeu_ps(t.data() + i, _mm256_cvtph_ps(_mm_add_epi16(_mm_set1_epi16(static_cast<short>(i)), step)));
    return t;
  }();
  return table.data();
}

// Rows are only a few hundred bytes: each 4-row pass is too short for the hardware prefetcher
// to ramp up, so each row asks for the same spot of the row this far ahead.
constexpr size_t kPrefetchRows = 16;

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// ---- Q4_0: two blocks per step. The 2 x 16 nibble bytes load as one ymm; its low nibbles
// are elements 0..15 of both blocks, its high nibbles elements 16..31, so int32 lanes 0..3
// belong to the first block and 4..7 to the second.
struct PairQ4 {
  int8_t lo[32];       // a[i][0..15], a[i+1][0..15]
  int8_t hi[32];       // a[i][16..31], a[i+1][16..31]
  int32_t offset[8];   // -8 * the activation bytes each int32 lane multiplies
  float d[8];          // d[i] x4, d[i+1] x4 (0 for the missing block of an odd count)
};

size_t q4_0_prep_bytes(int64_t n) { return static_cast<size_t>((n / QK + 1) / 2) * sizeof(PairQ4); }

void q4_0_prep(int64_t n, const void* act, void* prep) {
  const auto* y = static_cast<const BlockQ8_0*>(act);
  auto* p = static_cast<PairQ4*>(prep);
  const int64_t nb = n / QK;
  for (int64_t i = 0; i < nb; i += 2, ++p)
    for (int h = 0; h < 2; ++h) {
      const bool present = i + h < nb;
      for (int j = 0; j < 16; ++j) {
        p->lo[16 * h + j] = present ? y[i + h].qs[j] : 0;
        p->hi[16 * h + j] = present ? y[i + h].qs[16 + j] : 0;
      }
      for (int k = 0; k < 4; ++k) {
        int32_t s = 0;
        for (int j = 0; j < 4; ++j) s += p->lo[16 * h + 4 * k + j] + p->hi[16 * h + 4 * k + j];
        p->offset[4 * h + k] = -8 * s;
        p->d[4 * h + k] = present ? fp16_to_f32(y[i + h].d) : 0.0f;
      }
    }
}

template <int R>
void q4_0_rows(int64_t n, const uint8_t* w, size_t stride, const PairQ4* a, float* out) {
  const float* tbl = f16_table();
  const int64_t nb = n / QK;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; i += 2, ++a) {
    const bool pair = i + 1 < nb;
    const __m256i alo = load256(a->lo), ahi = load256(a->hi), off = load256(a->offset);
    const __m256 dy = _mm256_loadu_ps(a->d);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const BlockQ4_0* x = reinterpret_cast<const BlockQ4_0*>(w + r * stride) + i;
      if constexpr (R == 4) _mm_prefetch(reinterpret_cast<const char*>(x) + kPrefetchRows * stride, _MM_HINT_T0);
      __m256i q;
      __m256 dw;
      if (pair) [[likely]] {
        q = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(x[0].qs)), load128(x[1].qs), 1);
        dw = _mm256_blend_ps(_mm256_set1_ps(tbl[x[0].d]), _mm256_set1_ps(tbl[x[1].d]), 0xF0);
      } else {  // odd block count: the second half meets zero activations and scales
        q = _mm256_zextsi128_si256(load128(x[0].qs));
        dw = _mm256_set1_ps(tbl[x[0].d]);
      }
      const __m256i lo = _mm256_and_si256(q, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      const __m256i s = dot_u8s8(dot_u8s8(off, lo, alo), hi, ahi);
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dy), _mm256_cvtepi32_ps(s), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

void q4_0_gemv(int64_t n, const void* w, size_t stride, int64_t rows, const void* prep, float* out) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const PairQ4*>(prep);
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) q4_0_rows<4>(n, wb + r * stride, stride, a, out + r);
  for (; r < rows; ++r) q4_0_rows<1>(n, wb + r * stride, stride, a, out + r);
}

// ---- Q8_0: one block per step. With VNNI the weight codes are biased to unsigned (q ^ 0x80 =
// q + 128) and -128 * sum(a) starts the accumulator; without, the sign trick as in vec_dot.
struct BlockPrepQ8 {
  int8_t qs[32];
  int32_t offset[8];  // -128 * the activation bytes each int32 lane multiplies (VNNI only)
  float d[8];         // d broadcast
};

size_t q8_0_prep_bytes(int64_t n) { return static_cast<size_t>(n / QK) * sizeof(BlockPrepQ8); }

void q8_0_prep(int64_t n, const void* act, void* prep) {
  const auto* y = static_cast<const BlockQ8_0*>(act);
  auto* p = static_cast<BlockPrepQ8*>(prep);
  for (int64_t i = 0; i < n / QK; ++i, ++p) {
    const float d = fp16_to_f32(y[i].d);
    for (int j = 0; j < 32; ++j) p->qs[j] = y[i].qs[j];
    for (int k = 0; k < 8; ++k) {
      const int32_t s = y[i].qs[4 * k] + y[i].qs[4 * k + 1] + y[i].qs[4 * k + 2] + y[i].qs[4 * k + 3];
      p->offset[k] = kVnni ? -128 * s : 0;
      p->d[k] = d;
    }
  }
}

template <int R>
void q8_0_rows(int64_t n, const uint8_t* w, size_t stride, const BlockPrepQ8* a, float* out) {
  const float* tbl = f16_table();
  const int64_t nb = n / QK;
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i, ++a) {
    const __m256i ya = load256(a->qs), off = load256(a->offset);
    const __m256 dy = _mm256_loadu_ps(a->d);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const BlockQ8_0* x = reinterpret_cast<const BlockQ8_0*>(w + r * stride) + i;
      if constexpr (R == 4) _mm_prefetch(reinterpret_cast<const char*>(x) + kPrefetchRows * stride, _MM_HINT_T0);
      const __m256i q = load256(x->qs);
      __m256i s;
      if constexpr (kVnni)
        s = dot_u8s8(off, _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))), ya);
      else
        s = dot_u8s8(off, _mm256_sign_epi8(q, q), _mm256_sign_epi8(ya, q));
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(tbl[x->d]), dy), _mm256_cvtepi32_ps(s), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

void q8_0_gemv(int64_t n, const void* w, size_t stride, int64_t rows, const void* prep, float* out) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* a = static_cast<const BlockPrepQ8*>(prep);
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) q8_0_rows<4>(n, wb + r * stride, stride, a, out + r);
  for (; r < rows; ++r) q8_0_rows<1>(n, wb + r * stride, stride, a, out + r);
}

}  // namespace

GemvKernel gemv_kernel(WeightType weight) {
  switch (weight) {
    case WeightType::Q4_0: return {q4_0_prep_bytes, q4_0_prep, q4_0_gemv};
    case WeightType::Q8_0: return {q8_0_prep_bytes, q8_0_prep, q8_0_gemv};
    default: return {};
  }
}

}  // namespace minfer

#else  // no AVX2: matmul_mmq loops over vec_dot

namespace minfer {
GemvKernel gemv_kernel(WeightType) { return {}; }
}  // namespace minfer

#endif
