// Device code of the decode RoPE (NeoX) + KV-cache write, shared by rope_kv_store_kernel (one CTA
// per head) and the QKV matvec's tail (mmvq_fused: the last CTA does every head), so both give
// the same bits: the cos/sin table is rope.cu's expressions (angle, pow and sincos in double,
// rounded to float), the rotation rope.cu's float expressions.
#pragma once
#include <cstdint>

namespace minfer::cuda::rope_kv_device {

// cs[i], sn[i] for i = first, first + step, ... < half at position p (shared memory).
__device__ __forceinline__ void table(double p, int half, double base, float* cs, float* sn, int first, int step) {
  for (int i = first; i < half; i += step) {
    // inv_freq = base^(-2i/d) as HF (and the CPU twin) compute it: rope.cu's lines.
    const double inv_freq = pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(2 * half));
    double sd, cd;
    sincos(p * inv_freq, &sd, &cd);
    cs[i] = static_cast<float>(cd);
    sn[i] = static_cast<float>(sd);
  }
}

// Pair i of one head: x -> y (y[i], y[i + half]); also into the cache row kc when not null.
__device__ __forceinline__ void rotate(float x0, float x1, float c, float s, float* y, float* kc, int i, int half) {
  const float y0 = x0 * c - x1 * s;
  const float y1 = x0 * s + x1 * c;
  y[i] = y0;
  y[i + half] = y1;
  if (kc) {
    kc[i] = y0;
    kc[i + half] = y1;
  }
}

}  // namespace minfer::cuda::rope_kv_device
