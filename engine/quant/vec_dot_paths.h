// Explicit choice of the dot-product implementation, for tests and benchmarks that compare the
// portable integer path with the SIMD one. Normal callers use vec_dot() from quant.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/weight_type.h"

namespace minfer {

enum class DotPath { Scalar, Simd };

// The SIMD path exists for this weight type in this build (compiled with AVX2 etc.).
bool has_simd_vec_dot(WeightType weight);
// Like vec_dot, forced onto one path; Simd without one for the type is an Error.
float vec_dot_path(DotPath path, WeightType weight, int64_t n, const void* w_row, const void* act_row);
// The function vec_dot calls for this weight type, for inner loops that hoist the dispatch.
using VecDotFn = float (*)(int64_t n, const void* w_row, const void* act_row);
VecDotFn vec_dot_fn(WeightType weight);
// One weight row against 4 activation rows a + t * a_stride (t < 4), written to out[0..3]:
// what matmul_mmq uses for several tokens. Equals four vec_dot calls up to float rounding.
using VecDot4Fn = void (*)(int64_t n, const void* w_row, const void* act_rows, size_t a_stride, float out[4]);
// nullptr when the type has no 4-row kernel in this build (callers then loop over vec_dot).
VecDot4Fn vec_dot4_fn(WeightType weight);
// Decode GEMV: one activation row (in vec_dot_type's format) against many weight rows.
// prep rearranges the activation row once per call into prep_bytes(n) bytes; rows then writes
// out[r] = vec_dot(weight row r = w + r * w_stride, activation) for r < rows, up to float
// rounding. All null when the type has none in this build (callers then loop over vec_dot).
struct GemvKernel {
  size_t (*prep_bytes)(int64_t n) = nullptr;
  void (*prep)(int64_t n, const void* act_row, void* prep) = nullptr;
  void (*rows)(int64_t n, const void* w, size_t w_stride, int64_t rows, const void* prep, float* out) = nullptr;
};
GemvKernel gemv_kernel(WeightType weight);
// The instruction set the SIMD dots were compiled for ("avx2+vnni", "avx2", "none").
const char* simd_dot_isa();

}  // namespace minfer
