// Per-type kernels behind quant.h's dispatch (dequantize, reference quantize, vec_dot).
// One family per file: quant_float.cpp, quant_legacy.cpp, quant_kquants.cpp,
// vec_dot_scalar.cpp (portable integer dots), vec_dot_avx2.cpp (SIMD dots).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/weight_type.h"
#include "quant/blocks.h"

namespace minfer::qimpl {

// Round to nearest (ties to even, as lrintf) and clamp to [lo, hi], without a libm call (the
// quantizers' inner loops): v is clamped first, so the 1.5 * 2^23 trick is exact; NaN -> lo.
inline int round_clamp(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) v = static_cast<float>(lo);
  if (v > static_cast<float>(hi)) v = static_cast<float>(hi);
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

// n: element count, a multiple of the type's block size (checked by the dispatcher).
void dequantize_f32(const void* src, float* dst, int64_t n);
void dequantize_f16(const void* src, float* dst, int64_t n);
void dequantize_bf16(const void* src, float* dst, int64_t n);
void quantize_f32(const float* src, void* dst, int64_t n);
void quantize_f16(const float* src, void* dst, int64_t n);
void quantize_bf16(const float* src, void* dst, int64_t n);

void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q8_1(const void* src, float* dst, int64_t n);
void quantize_q4_0(const float* src, void* dst, int64_t n);
void quantize_q4_1(const float* src, void* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n);
void quantize_q5_1(const float* src, void* dst, int64_t n);
void quantize_q8_0(const float* src, void* dst, int64_t n);
void quantize_q8_1(const float* src, void* dst, int64_t n);

void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);
void dequantize_q8_k(const void* src, float* dst, int64_t n);
void quantize_q4_k(const float* src, void* dst, int64_t n);
void quantize_q5_k(const float* src, void* dst, int64_t n);
void quantize_q6_k(const float* src, void* dst, int64_t n);
void quantize_q8_k(const float* src, void* dst, int64_t n);

// Dot products: w in the weight type, a in its activation type (see vec_dot_type).
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);

namespace scalar {
float dot_f32(int64_t n, const void* w, const void* a);
float dot_f16(int64_t n, const void* w, const void* a);
float dot_bf16(int64_t n, const void* w, const void* a);
float dot_q4_0(int64_t n, const void* w, const void* a);
float dot_q4_1(int64_t n, const void* w, const void* a);
float dot_q5_0(int64_t n, const void* w, const void* a);
float dot_q5_1(int64_t n, const void* w, const void* a);
float dot_q8_0(int64_t n, const void* w, const void* a);
float dot_q4_k(int64_t n, const void* w, const void* a);
float dot_q5_k(int64_t n, const void* w, const void* a);
float dot_q6_k(int64_t n, const void* w, const void* a);
}  // namespace scalar

// SIMD dots; the table returns nullptr for a type without one in this build.
struct SimdDots {
  VecDotFn f32 = nullptr, f16 = nullptr, bf16 = nullptr;
  VecDotFn q4_0 = nullptr, q4_1 = nullptr, q5_0 = nullptr, q5_1 = nullptr, q8_0 = nullptr;
  VecDotFn q4_k = nullptr, q5_k = nullptr, q6_k = nullptr;
};
const SimdDots& simd_dots();

// One weight row against four activation rows (a + t * a_stride bytes, t < 4): the weight block
// is unpacked once for all four. SIMD-only, for the Q8_0-activation types; nullptr otherwise.
using VecDot4Fn = void (*)(int64_t n, const void* w, const void* a, size_t a_stride, float out[4]);
VecDot4Fn simd_dot4(WeightType weight);

}  // namespace minfer::qimpl
