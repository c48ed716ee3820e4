// Prefill matrix multiplication on quantized weights with int8 activations ("MMQ", the default
// prefill path): y[nt][n_out] = x[nt][n_in] . W^T (+ bias), x given as Q8_1 blocks
// (quantize_q8_1), integer dot products on the int8 tensor cores (mma.sync) with per-block
// float scales; the output is bit-for-bit that of the dp4a kernel it replaced.
// CPU twin: matmul_mmq (cpu/matmul.h). Test: engine/tests/test_cuda_mmq.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// w: [n_out][n_in] in type t (16-byte aligned); x_q8_1: [nt][n_in/32] BlockQ8_1 (4-byte aligned);
// bias: n_out f32 or nullptr; y: [nt][n_out] f32. n_in a multiple of t's block size.
void mmq(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt, const float* bias,
         float* y, cudaStream_t s);

// As mmq, with the CTA's output tile forced to tile_rows = 128, 64, 32 or 16 rows (0: the launcher's
// choice from the grid size, as mmq). For tests, which must cover every tile on any GPU, and the
// backend, which passes CudaOptions::mmq_tile (MINFER_MMQ_TILE).
void mmq_with_tile(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt,
                   const float* bias, float* y, int tile_rows, cudaStream_t s);

// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
bool mmq_supports(WeightType t);

}  // namespace minfer::cuda
