// Rotary position embedding. CPU twins: cpu::rope_neox, cpu::rope_normal.
//   rope_neox (Qwen2, Qwen3): in each head, element i pairs with i + head_dim/2.
//   rope_normal (Llama, ggml's mode 0): in each head, element 2i pairs with 2i + 1.
// x, y [rows][n_heads * head_dim] f32; pos: DEVICE int32 [rows] (read on the device, so a
// captured decode graph follows the live position). freq_divisors: DEVICE f32 [head_dim/2]
// dividing the base frequencies (rope_freqs.weight, Llama 3.1 scaling), or null. head_dim even,
// <= 256. y may alias x. Graph-capturable launchers.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

void rope_neox(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
               double base, cudaStream_t s, const float* freq_divisors = nullptr);
void rope_normal(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
                 double base, cudaStream_t s, const float* freq_divisors = nullptr);

}  // namespace minfer::cuda
