// CPU matrix multiplication by a (possibly quantized) weight matrix, the two prefill paths:
//   matmul_mmq   : activations quantized once to the weight type's vec_dot_type (Q8_0/Q8_1/Q8_K)
//                  and integer dot products against the quantized weight rows ("MMQ", default);
//   matmul_float : weight tiles dequantized to f32 per thread and a cache-blocked f32 GEMM
//                  (the MINFER_MMQ=0 path).
// Both compute y[nt][out] = x[nt][in] . W^T (+ bias[out]), W row-major [out][in] of type wt,
// x and y token-major f32. bias may be null. Throws Error for a bad type or row length.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "core/weight_type.h"

namespace minfer {

void matmul_mmq(const void* w, WeightType wt, int64_t n_out, int64_t n_in, const float* x,
                int64_t nt, const float* bias, float* y, ThreadPool& pool);

void matmul_float(const void* w, WeightType wt, int64_t n_out, int64_t n_in, const float* x,
                  int64_t nt, const float* bias, float* y, ThreadPool& pool);

// Shared argument checks (weight type usable as a matrix, n_in a multiple of its block).
void check_matmul_args(WeightType wt, int64_t n_out, int64_t n_in, int64_t nt, const char* who);

}  // namespace minfer
