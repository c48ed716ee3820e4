// Device code shared by rope.cu and rope_kv.cu, so the unfused and the fused RoPE give the same
// bits: the angle of pair i and its cos/sin, the offsets of a pair's two values in a head per
// layout, and the rotation.
//   theta_i = p * base^(-2i/d) [/ freq_divisors[i]]   (double, as cpu::rope computes it; Llama 3.1
//   frequency scaling stores the divisors as rope_freqs.weight), cos/sin in double rounded to float
//   NeoX (Qwen):    pair i = (i, i + d/2)      normal (Llama, ggml mode 0): pair i = (2i, 2i + 1)
//   y_a = x_a cos - x_b sin;  y_b = x_a sin + x_b cos   (in float)
#pragma once
#include <cuda_runtime.h>

#include "model/architecture.h"

namespace minfer::cuda {

// freq_divisors: DEVICE f32 [half] or null.
__device__ __forceinline__ void rope_cos_sin(double p, int i, int half, double base, const float* freq_divisors,
                                             float& c, float& s) {
  double inv_freq = pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(2 * half));
  if (freq_divisors) inv_freq /= static_cast<double>(freq_divisors[i]);
  double sd, cd;
  sincos(p * inv_freq, &sd, &cd);
  c = static_cast<float>(cd);
  s = static_cast<float>(sd);
}

// The offsets in its head of pair i's two values.
template <RopeMode M>
__device__ __forceinline__ int rope_first(int i) {
  return M == RopeMode::NeoX ? i : 2 * i;
}
template <RopeMode M>
__device__ __forceinline__ int rope_second(int i, int half) {
  return M == RopeMode::NeoX ? i + half : 2 * i + 1;
}

__device__ __forceinline__ void rope_rotate(float x0, float x1, float c, float s, float& y0, float& y1) {
  y0 = x0 * c - x1 * s;
  y1 = x0 * s + x1 * c;
}

}  // namespace minfer::cuda
