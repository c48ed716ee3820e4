// AVX2 (+FMA, F16C, optional AVX-VNNI) dot products. Same arithmetic as vec_dot_scalar.cpp:
// exact integer sums inside each block, then one float multiply-add per block; only the order
// of the float additions differs. Compiled to an empty table without AVX2.
#include "quant/quant_impl.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <cstring>

#include "core/fp16.h"
#include "quant/avx2_helpers.h"

namespace minfer::qimpl {
namespace {

using avx2::dot_u8s8;
using avx2::hsum;

// f16 -> f32 through F16C's vector form: the scalar vcvtsh2ss that _Float16 compiles to merges
// into its destination register and chained the blocks' scale computations into one long
// dependency through the loop.
inline float h2f(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }

// Sum of s8(x) * s8(y) in int32 lanes, through |x| and y with x's sign.
inline __m256i dot_s8s8(__m256i x, __m256i y) {
  return dot_u8s8(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

// 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15) then high (16..31).
// The 16 bytes go to both lanes by a broadcast load; a per-lane variable shift (0 | 4) then
// brings the high nibbles down in the upper lane without a cross-lane shuffle.
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i shifted = _mm256_srlv_epi64(both, _mm256_set_epi64x(4, 4, 0, 0));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}
// 32 bits -> 32 bytes, 0xFF where the bit is set.
inline __m256i expand_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i byte_of = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                            0x0101010101010101, 0x0000000000000000);
  const __m256i rep = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), byte_of);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit);
}

inline __m256 scale8(uint16_t a, uint16_t b) { return _mm256_set1_ps(h2f(a) * h2f(b)); }

// Q4_0: unsigned codes 0..15 straight into the u8 x s8 product, minus 8 * sum(a) (one more
// dot against a constant 8) - fewer instructions than recentring and the sign trick.
inline __m256i q4_0_block_dot(const BlockQ4_0& x, const BlockQ8_0& y) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs));
  return _mm256_sub_epi32(dot_u8s8(_mm256_setzero_si256(), unpack_nibbles(x.qs), a),
                          dot_u8s8(_mm256_setzero_si256(), _mm256_set1_epi8(8), a));
}
float dot_q4_0(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  const int64_t nb = n / QK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {  // two independent chains hide the FMA latency
    acc0 = _mm256_fmadd_ps(scale8(x[i].d, y[i].d), _mm256_cvtepi32_ps(q4_0_block_dot(x[i], y[i])), acc0);
    acc1 = _mm256_fmadd_ps(scale8(x[i + 1].d, y[i + 1].d),
                           _mm256_cvtepi32_ps(q4_0_block_dot(x[i + 1], y[i + 1])), acc1);
  }
  for (; i < nb; ++i)
    acc0 = _mm256_fmadd_ps(scale8(x[i].d, y[i].d), _mm256_cvtepi32_ps(q4_0_block_dot(x[i], y[i])), acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

float dot_q8_0(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  const int64_t nb = n / QK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 1 < nb; i += 2) {
    const __m256i p0 = dot_s8s8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs)),
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs)));
    const __m256i p1 = dot_s8s8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i + 1].qs)),
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i + 1].qs)));
    acc0 = _mm256_fmadd_ps(scale8(x[i].d, y[i].d), _mm256_cvtepi32_ps(p0), acc0);
    acc1 = _mm256_fmadd_ps(scale8(x[i + 1].d, y[i + 1].d), _mm256_cvtepi32_ps(p1), acc1);
  }
  for (; i < nb; ++i) {
    const __m256i p = dot_s8s8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs)),
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs)));
    acc0 = _mm256_fmadd_ps(scale8(x[i].d, y[i].d), _mm256_cvtepi32_ps(p), acc0);
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

float dot_q5_0(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / QK; ++i) {
    // q - 16 as int8: the nibble when the fifth bit is set, else nibble - 16 = nibble | 0xF0.
    const __m256i hi = _mm256_andnot_si256(expand_bits(x[i].qh), _mm256_set1_epi8(static_cast<char>(0xF0)));
    const __m256i q = _mm256_or_si256(unpack_nibbles(x[i].qs), hi);
    const __m256i p = dot_s8s8(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs)));
    acc = _mm256_fmadd_ps(scale8(x[i].d, y[i].d), _mm256_cvtepi32_ps(p), acc);
  }
  return hsum(acc);
}

float dot_q4_1(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(act);
  __m256 acc = _mm256_setzero_ps();
  float offsets = 0;
  for (int64_t i = 0; i < n / QK; ++i) {
    const __m256i p = dot_u8s8(_mm256_setzero_si256(), unpack_nibbles(x[i].qs),
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs)));
    acc = _mm256_fmadd_ps(scale8(x[i].d, y[i].d), _mm256_cvtepi32_ps(p), acc);
    offsets += h2f(x[i].m) * h2f(y[i].s);
  }
  return hsum(acc) + offsets;
}

float dot_q5_1(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(act);
  __m256 acc = _mm256_setzero_ps();
  float offsets = 0;
  for (int64_t i = 0; i < n / QK; ++i) {
    const __m256i hi = _mm256_and_si256(expand_bits(x[i].qh), _mm256_set1_epi8(0x10));
    const __m256i q = _mm256_or_si256(unpack_nibbles(x[i].qs), hi);
    const __m256i p = dot_u8s8(_mm256_setzero_si256(), q,
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs)));
    acc = _mm256_fmadd_ps(scale8(x[i].d, y[i].d), _mm256_cvtepi32_ps(p), acc);
    offsets += h2f(x[i].m) * h2f(y[i].s);
  }
  return hsum(acc) + offsets;
}

// Q4_K / Q5_K: per 64-element group, maddubs gives int16 pair sums of one sub-block, madd
// multiplies them by that sub-block's six-bit scale into int32.
template <bool kFifthBit, class Block>
float dot_affine_k(int64_t n, const Block* x, const BlockQ8_K* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc = _mm256_setzero_ps();
  float mins_total = 0;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    uint8_t sc[8], m[8];
    int32_t dot_min = 0;
    for (int j = 0; j < 8; ++j) {
      get_scale_min_k4(j, x[i].scales, &sc[j], &m[j]);
      dot_min += m[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
    }
    __m256i hbits = _mm256_setzero_si256();
    if constexpr (kFifthBit) hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh));
    __m256i sumi = _mm256_setzero_si256();
    for (int g = 0; g < 4; ++g) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * g));
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kFifthBit) {
        const __m256i one = _mm256_set1_epi8(1);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
        hbits = _mm256_srli_epi16(hbits, 2);
      }
      const __m256i a_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 64 * g));
      const __m256i a_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 64 * g + 32));
      const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, a_lo), _mm256_set1_epi16(sc[2 * g]));
      const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, a_hi), _mm256_set1_epi16(sc[2 * g + 1]));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p_lo, p_hi));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * h2f(x[i].d)), _mm256_cvtepi32_ps(sumi), acc);
    mins_total += y[i].d * h2f(x[i].dmin) * static_cast<float>(dot_min);
  }
  return hsum(acc) - mins_total;
}
float dot_q4_k(int64_t n, const void* w, const void* act) {
  return dot_affine_k<false>(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(act));
}
float dot_q5_k(int64_t n, const void* w, const void* act) {
  return dot_affine_k<true>(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(act));
}

// Q6_K: codes taken unsigned (0..63) for maddubs; the -32 offset comes back through bsums.
float dot_q6_k(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  float offsets = 0;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    int32_t off = 0;
    for (int j = 0; j < 16; ++j) off += x[i].scales[j] * y[i].bsums[j];
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[i].ql + 64 * half;
      const int8_t* a = y[i].qs + 128 * half;
      const int8_t* sc = x[i].scales + 8 * half;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh + 32 * half));
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(h, low2), 4)),
          _mm256_or_si256(_mm256_and_si256(l1, low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), low2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), low2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), low2), 4)),
      };
      for (int k = 0; k < 4; ++k) {  // 32 elements = sub-blocks 2k and 2k+1 of this half
        const __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32 * k)));
        const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
      }
    }
    const float d = h2f(x[i].d) * y[i].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    offsets += d * 32.0f * static_cast<float>(off);
  }
  return hsum(acc) - offsets;
}

// Float weights: 4 independent accumulators (32 elements per step) cover the FMA latency.
template <class Load8, class LoadOne>
float dot_float(int64_t n, const float* a, Load8 load8, LoadOne load1) {
  __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) s[u] = _mm256_fmadd_ps(load8(i + 8 * u), _mm256_loadu_ps(a + i + 8 * u), s[u]);
  for (; i + 8 <= n; i += 8) s[0] = _mm256_fmadd_ps(load8(i), _mm256_loadu_ps(a + i), s[0]);
  float tail = 0;
  for (; i < n; ++i) tail += load1(i) * a[i];
  return hsum(_mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3]))) + tail;
}
float dot_f32(int64_t n, const void* w, const void* act) {
  const float* x = static_cast<const float*>(w);
  return dot_float(n, static_cast<const float*>(act), [x](int64_t i) { return _mm256_loadu_ps(x + i); },
                   [x](int64_t i) { return x[i]; });
}
float dot_f16(int64_t n, const void* w, const void* act) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  return dot_float(
      n, static_cast<const float*>(act),
      [x](int64_t i) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))); },
      [x](int64_t i) { return h2f(x[i]); });
}
float dot_bf16(int64_t n, const void* w, const void* act) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  return dot_float(
      n, static_cast<const float*>(act),
      [x](int64_t i) {
        const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
      },
      [x](int64_t i) { return bf16_to_f32(x[i]); });
}

// Q4_0 / Q5_0 / Q8_0 weight codes as int8 (q - offset), one 32-element block.
inline __m256i codes_q4_0(const BlockQ4_0& b) { return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8)); }
inline __m256i codes_q5_0(const BlockQ5_0& b) {
  const __m256i hi = _mm256_andnot_si256(expand_bits(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0)));
  return _mm256_or_si256(unpack_nibbles(b.qs), hi);
}
inline __m256i codes_q8_0(const BlockQ8_0& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }

// One weight row x four Q8_0 activation rows: the codes and their absolute values are made
// once per block and reused by the four dots.
template <class Block, __m256i (*Codes)(const Block&)>
void dot4_q8_family(int64_t n, const void* w, const void* act, size_t a_stride, float out[4]) {
  const auto* x = static_cast<const Block*>(w);
  const BlockQ8_0* y[4];
  for (int t = 0; t < 4; ++t)
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(act) + t * a_stride);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < n / QK; ++i) {
    const __m256i q = Codes(x[i]);
    const __m256i aq = _mm256_sign_epi8(q, q);
    const float dw = h2f(x[i].d);
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      const __m256i yt = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs));
      const __m256i p = dot_u8s8(_mm256_setzero_si256(), aq, _mm256_sign_epi8(yt, q));
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * h2f(y[t][i].d)), _mm256_cvtepi32_ps(p), acc[t]);
    }
  }
  for (int t = 0; t < 4; ++t) out[t] = hsum(acc[t]);
}

}  // namespace

VecDot4Fn simd_dot4(WeightType weight) {
  switch (weight) {
    case WeightType::Q4_0: return dot4_q8_family<BlockQ4_0, codes_q4_0>;
    case WeightType::Q5_0: return dot4_q8_family<BlockQ5_0, codes_q5_0>;
    case WeightType::Q8_0: return dot4_q8_family<BlockQ8_0, codes_q8_0>;
    default: return nullptr;
  }
}

const SimdDots& simd_dots() {
  static const SimdDots t = [] {
    SimdDots s;
    s.f32 = dot_f32;
    s.f16 = dot_f16;
    s.bf16 = dot_bf16;
    s.q4_0 = dot_q4_0;
    s.q4_1 = dot_q4_1;
    s.q5_0 = dot_q5_0;
    s.q5_1 = dot_q5_1;
    s.q8_0 = dot_q8_0;
    s.q4_k = dot_q4_k;
    s.q5_k = dot_q5_k;
    s.q6_k = dot_q6_k;
    return s;
  }();
  return t;
}

}  // namespace minfer::qimpl

namespace minfer {
const char* simd_dot_isa() {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return "avx2+avx512vnni";
#elif defined(__AVXVNNI__)
  return "avx2+avxvnni";
#else
  return "avx2";
#endif
}
}  // namespace minfer

#else  // no AVX2: every type takes the scalar path

namespace minfer::qimpl {
const SimdDots& simd_dots() {
  static const SimdDots none;
  return none;
}
VecDot4Fn simd_dot4(WeightType) { return nullptr; }
}  // namespace minfer::qimpl
namespace minfer {
const char* simd_dot_isa() { return "none"; }
}  // namespace minfer

#endif
