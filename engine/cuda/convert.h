// Float format conversions on the device (activations to/from the f16/bf16 GEMM path).
// Rounding: f32 -> f16/bf16 round to nearest, ties to even (IEEE, as cvt.rn); the widening
// directions are exact. Graph-capturable launchers; no CPU twin in ops.h (the tests carry a
// bit-exact host reference).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

void f32_to_f16(const float* x, __half* y, int64_t n, cudaStream_t s);
void f16_to_f32(const __half* x, float* y, int64_t n, cudaStream_t s);
void f32_to_bf16(const float* x, __nv_bfloat16* y, int64_t n, cudaStream_t s);
void bf16_to_f32(const __nv_bfloat16* x, float* y, int64_t n, cudaStream_t s);

}  // namespace minfer::cuda
