// Dequantization of a whole weight matrix of any type to f16 on the GPU: the W16 cache of the
// f16 tensor-core prefill path (MINFER_MMQ=0). CPU twin: dequantize_row (quant/quant.h), whose
// f32 value is rounded to nearest f16 here. Test: engine/tests/test_cuda_dequant.cpp.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// y[r][c] = f16(value of element c of row r of w), w row-major [rows][cols] in type t.
// w and y 16-byte aligned (cudaMalloc'd); cols a multiple of t's block size. Graph-capturable.
void dequant_to_f16(WeightType t, const void* w, int64_t rows, int64_t cols, __half* y, cudaStream_t s);

}  // namespace minfer::cuda
