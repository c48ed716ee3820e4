// Rotary position embedding, NeoX layout (Qwen2): in each head, element i pairs with
// i + head_dim/2. CPU twin: cpu::rope_neox. x, y [rows][n_heads * head_dim] f32; pos: DEVICE
// int32 [rows] (read on the device, so a captured decode graph follows the live position).
// head_dim even, <= 256. y may alias x. Graph-capturable launcher.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

void rope_neox(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
               double base, cudaStream_t s);

}  // namespace minfer::cuda
