// Activation quantization to Q8_1 on the GPU: the input of mmvq (decode) and mmq (prefill).
// CPU twin: quantize_row(WeightType::Q8_1, ...) (quant/quant.h), matched bit for bit.
// Test: engine/tests/test_cuda_quantize.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

// x: f32 [rows][cols] (16-byte aligned), cols % 32 == 0; y: rows * cols/32 BlockQ8_1 (36 bytes:
// half d, half s = d * sum(q), int8 q[32]), 4-byte aligned. Graph-capturable.
void quantize_q8_1(const float* x, int64_t rows, int64_t cols, void* y, cudaStream_t s);

}  // namespace minfer::cuda
