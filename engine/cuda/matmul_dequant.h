// Prefill GEMM for Q4_0, Q8_0, Q4_K and Q6_K weights on Hopper with the weights dequantized inside
// the kernel: y = x W^T + bias with x in f16 and W's elements as f16 (dequant.h's f32 values
// rounded to f16, as the W16 cache holds them), f16 x f16 -> f32 wgmma. The f16 prefill path's
// maths (MINFER_MMQ=0) at the quantized weights' memory: no W16 cache for the weights it takes. Why not int8: with 32-element
// block scales on both operands an int8 GEMM pays 3 CUDA-core instructions per accumulator and
// block, which bound the MMQ tiles far below the tensor cores (docs/benchmarks.md, session 23);
// here a weight element is dequantized once per 128 tokens and the accumulators only add.
// CPU twin: matmul_float (cpu/matmul.h) with F16 weights (dequantize_row's values rounded to f16)
// on x rounded to f16. Test: engine/tests/test_cuda_matmul_dequant.cpp.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// Whether the kernel takes these weights: Q4_0 or Q8_0 with n_in a multiple of 128, or Q4_K or Q6_K
// (rows of whole 256-blocks); n_in at most 2^24, w 8-byte aligned, and the device is compute capability 9.0 (the kernel is built for sm_90a only).
bool matmul_dequant_applies(WeightType t, int64_t n_in, const void* w);

// y[t][r] = sum_k x[t][k] * f16(W[r][k]) (+ bias[r]), accumulated in f32; x row-major [nt][n_in]
// f16 and 16-byte aligned, w row-major [n_out][n_in] in type t, y row-major [nt][n_out].
// Graph-capturable; fails with the reason when the weights do not apply or x is misaligned.
void matmul_dequant(WeightType t, const void* w, int64_t n_out, int64_t n_in, const __half* x, int64_t nt,
                    const float* bias, float* y, cudaStream_t s);

}  // namespace minfer::cuda
