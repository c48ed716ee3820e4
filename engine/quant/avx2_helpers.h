// Small AVX2 building blocks shared by the dot-product kernels (vec_dot_avx2.cpp) and the
// decode GEMV (gemv_avx2.cpp). Include only inside `#if defined(__AVX2__) ...` sections.
#pragma once
#include <immintrin.h>

namespace minfer::avx2 {

// Whether dot_u8s8 is one VNNI instruction (no int16 intermediate that could saturate).
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
constexpr bool kVnni = true;
#else
constexpr bool kVnni = false;
#endif

// acc + sum over groups of 4 of u8(u) * s8(s), as int32 lanes.
// Without VNNI, maddubs pairs stay below int16 saturation as long as |u| <= 128, |s| <= 127.
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u, s);
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace minfer::avx2
