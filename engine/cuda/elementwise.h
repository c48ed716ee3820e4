// Elementwise float kernels (add, mul, SiLU, SwiGLU, bias add, last-row copy): launchers.
// CPU twins: cpu::add, cpu::mul, cpu::silu, cpu::swiglu, cpu::add_bias (engine/cpu/ops.h).
// All pointers are device f32; y may alias an input (each element is read before it is written
// by the same thread). Every launcher is graph-capturable: no sync, no allocation.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

void add(const float* a, const float* b, float* y, int64_t n, cudaStream_t s);  // y = a + b
void mul(const float* a, const float* b, float* y, int64_t n, cudaStream_t s);  // y = a * b
void silu(const float* x, float* y, int64_t n, cudaStream_t s);                 // y = x * sigmoid(x)
// y = silu(gate) * up (the Qwen2 MLP's gate/up product).
void swiglu(const float* gate, const float* up, float* y, int64_t n, cudaStream_t s);
// y[r][c] = x[r][c] + bias[c] for x, y [rows][cols].
void add_bias(const float* x, const float* bias, float* y, int64_t rows, int64_t cols, cudaStream_t s);
// y[0:cols] = x[row][0:cols] (LastRow: the logits of the prompt's last token).
void copy_row(const float* x, int64_t row, int64_t cols, float* y, cudaStream_t s);

}  // namespace minfer::cuda
