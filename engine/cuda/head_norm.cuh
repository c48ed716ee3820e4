// Device code shared by head_rms_norm.cu and rope_kv.cu (its QK-norm prologue), so the unfused
// and the fused per-head RMSNorm give the same bits: one warp computes a head's scale.
//   ss = sum_c x[c]^2 (double: lane l adds x[l], x[l + 32], ..., then an xor butterfly, after which
//   every lane holds the same total);  scale = f32(1 / sqrt(ss / head_dim + eps))  (rms_norm's
//   expression);  y[c] = x[c] * scale * w[c]  (two f32 multiplies, as cpu::rms_norm).
#pragma once
#include <cuda_runtime.h>

namespace minfer::cuda {

// Called by all 32 lanes of a warp (lane = threadIdx.x % 32); every lane returns the scale.
__device__ __forceinline__ float head_rms_scale(const float* xh, int head_dim, float eps) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  double ss = 0;
  for (int c = lane; c < head_dim; c += 32) ss += static_cast<double>(xh[c]) * xh[c];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  return static_cast<float>(1.0 / sqrt(ss / static_cast<double>(head_dim) + static_cast<double>(eps)));
}

__device__ __forceinline__ float head_rms_apply(float x, float scale, float w) { return x * scale * w; }

}  // namespace minfer::cuda
