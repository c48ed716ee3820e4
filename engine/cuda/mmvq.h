// Decode matrix-vector products on the GPU (one token): y[o] = dot(W row o, x) (+ bias[o]).
//   mmvq:       quantized weights x Q8_1 activations (quantize_q8_1 of the f32 row), int8 dp4a
//               dots with one float scale per 32 (Q6_K: 16) weights.
//   gemv_float: F32/F16/BF16 weights x f32 activations, f32 accumulation.
// CPU twins: vec_dot / matmul_mmq (cpu/matmul.h) with nt = 1. Test: engine/tests/test_cuda_mmvq.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// w: [n_out][n_in] in type t (16-byte aligned); x_q8_1: n_in/32 BlockQ8_1 (4-byte aligned);
// bias: n_out f32 or nullptr; y: n_out f32. n_in a multiple of t's block size.
void mmvq(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, const float* bias, float* y,
          cudaStream_t s);
// mmvq, and y_res = y + residual in the same launch (the residual Add's bits: a fused epilogue),
// for rows that stream (mmvq_residual_usable): the FFN down of wide models, whose input is past
// the fused matvecs' f32 prologue (mmvq_fused.h, kFusedMaxInput), takes its Q8_1 row this way.
bool mmvq_residual_usable(WeightType t, int64_t n_in);
void mmvq_residual(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, const float* bias,
                   float* y, const float* residual, float* y_res, cudaStream_t s);
// w: [n_out][n_in] F32/F16/BF16 (16-byte aligned for the vector path, any n_in); x: n_in f32.
void gemv_float(WeightType t, const void* w, int64_t n_out, int64_t n_in, const float* x, const float* bias, float* y,
                cudaStream_t s);

// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
bool mmvq_supports(WeightType t);

}  // namespace minfer::cuda
