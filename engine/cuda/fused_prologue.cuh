// The fused decode matvecs' prologue (mmvq_fused.cu, mmvq_stream.cu): [RMSNorm] of the f32
// input row, then its Q8_1 quantization into shared memory, with the same device code and
// order as rms_norm.cu and quantize.cu, so the bytes equal the unfused kernels' (rms_norm's
// per-thread float4 loop and cub::BlockReduce<double, 256>; q8_1_device.cuh's quantizer).
// Thread t sums float4 t, t + 256, ...; then each group of 8 lanes quantizes one 32-value block
// per pass (lane sub owns values 4sub..4sub+3: one float4 of x and of norm_w), 32 blocks per
// pass; the second read of x hits L1.
#pragma once
#include <cub/block/block_reduce.cuh>

#include "cuda/q8_1_device.cuh"
#include "quant/blocks.h"

namespace minfer::cuda {

constexpr int kPrologueThreads = 256;  // = rms_norm's CTA: the double sum is reduced in the same order

struct Prologue {
  const float* x;
  const float* norm_w;  // nullptr: no norm
  float* x_hat_out;     // nullptr: not written
  int n_in;             // <= kFusedMaxInput, multiple of 32
  float eps;
};

// Before pdl_wait (pdl.cuh rule 3: a weight): the norm weight into L1, so that the quantize passes
// of quantize_prologue, one load of it each, do not wait for L2 once per pass. Every thread of the
// CTA calls it with the prologue's arguments.
__device__ __forceinline__ void prefetch_prologue_weight(const Prologue& p) {
  if (!p.norm_w) return;
  const float4* w4 = reinterpret_cast<const float4*>(p.norm_w);
  for (int i = threadIdx.x; i < p.n_in / 4; i += kPrologueThreads) asm volatile("prefetch.global.L1 [%0];" ::"l"(w4 + i));
}

// x_hat = [rms_norm](x), written to x_hat_out when not null, and quantized to Q8_1 into xq (shared
// memory, n_in/32 blocks). Every thread of the CTA must call it; it ends with a barrier.
__device__ __forceinline__ void quantize_prologue(const Prologue& p, float* __restrict__ x_hat_out,
                                                  BlockQ8_1* __restrict__ xq) {
  using BlockReduce = cub::BlockReduce<double, kPrologueThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float row_scale;
  const float4* x4 = reinterpret_cast<const float4*>(p.x);
  const int64_t cols = p.n_in;
  float scale = 0.0f;
  if (p.norm_w) {
    // rms_norm_kernel<true>'s loop and reduction, unchanged (same order, same rounding).
    double ss = 0;
    for (int64_t i = threadIdx.x; i < cols / 4; i += kPrologueThreads) {
      const float4 v = x4[i];
      ss += static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y + static_cast<double>(v.z) * v.z +
            static_cast<double>(v.w) * v.w;
    }
    ss = BlockReduce(tmp).Sum(ss);  // valid in thread 0 only
    if (threadIdx.x == 0)
      row_scale = static_cast<float>(1.0 / sqrt(ss / static_cast<double>(cols) + static_cast<double>(p.eps)));
    __syncthreads();
    scale = row_scale;
  } else {
    // No norm pass to bring x in: prefetch all of it into L1 at once, so the passes below, one
    // load each, wait for L1 rather than one L2 round trip per pass.
    for (int64_t i = threadIdx.x; i < cols / 4; i += kPrologueThreads)
      asm volatile("prefetch.global.L1 [%0];" ::"l"(x4 + i));
  }
  const float4* w4 = reinterpret_cast<const float4*>(p.norm_w);
  float4* o4 = reinterpret_cast<float4*>(x_hat_out);
  const int n_blocks = p.n_in / QK;
  const int sub = threadIdx.x % 8;
  // Loop bounds are the same for every thread (whole warps run every shuffle).
  for (int b0 = 0; b0 < n_blocks; b0 += kPrologueThreads / 8) {
    const int b = b0 + static_cast<int>(threadIdx.x) / 8;
    const bool active = b < n_blocks;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (active) {
      const int i = b * 8 + sub;  // float4 index: values [32b + 4sub, +4)
      v = x4[i];
      if (w4) {
        const float4 g = w4[i];
        v = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
      }
      if (o4) o4[i] = v;
    }
    const qb::Q8_1Quad q = qb::quantize_q8_1_quad(v);
    if (active) qb::store_q8_1_quad(xq + b, sub, q);
  }
  __syncthreads();
}

}  // namespace minfer::cuda
