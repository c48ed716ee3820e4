// RMSNorm: y = x / sqrt(mean(x^2) + eps) * w, per row of x [rows][cols]. CPU twin: cpu::rms_norm.
// Graph-capturable launcher; y may alias x.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps, cudaStream_t s);

}  // namespace minfer::cuda
