// Per-head RMSNorm (qwen3's attn_q_norm / attn_k_norm): rms_norm over each head's head_dim values,
// one weight {head_dim} shared by every head. CPU twin: cpu::head_rms_norm.
// x, y [rows][n_heads * head_dim] f32 (heads contiguous); w: DEVICE f32 [head_dim]. y may alias x.
// Graph-capturable launcher.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

void head_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
                   float eps, cudaStream_t s);

}  // namespace minfer::cuda
