// Prefill matmul by float weights on the tensor cores, through cuBLAS (the toolkit's GEMM is
// better than one we would write; the quantized kernels mmq/mmvq/dequant are ours):
//   y[nt][n_out] = x[nt][n_in] . W^T, W row-major [n_out][n_in], f32 accumulation and output.
// F16 weights (the W16 cache of dequantized weights, or F16 files): x -> f16, f16 tensor cores.
// BF16 weights: x -> bf16, bf16 tensor cores. F32 weights: plain f32 SGEMM (no TF32), so an
// F32 model computes in f32 as the CPU does.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// x_scratch: room for nt*n_in halves (unused for F32 weights).
void matmul_float_weights(cublasHandle_t h, WeightType wt, const void* w, int64_t n_out, int64_t n_in,
                          const float* x, int64_t nt, void* x_scratch, float* y, cudaStream_t s);

// cuBLAS status as an Error naming the call.
void check_cublas(cublasStatus_t st, const char* what);

}  // namespace minfer::cuda
