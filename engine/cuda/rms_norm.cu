// RMSNorm, per row:  ss = sum_c x[c]^2;  scale = 1 / sqrt(ss / cols + eps);  y[c] = x[c] * scale * w[c].
// The sum of squares is accumulated in double, as cpu::rms_norm does: Qwen's residual stream has
// a +30 outlier channel beside values within +-3, and matching the CPU twin's rounding keeps the
// two backends' traces comparable. Hopper runs FP64 at half the FP32 rate; one FMA per element
// on a memory-bound kernel costs nothing measurable.
// Thread-to-data: one CTA per row; thread t reads float4 t, t + 256, ... of the row (coalesced,
// 4 KiB per CTA-wide pass), or scalars when the row is not float4-aligned. The block-wide sum is
// cub::BlockReduce (warp shuffles, then one shared-memory step across warps): CUB's version is
// tuned and correct for any block size, so we do not hand-roll it.
#include "cuda/rms_norm.h"

#include <cub/block/block_reduce.cuh>

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;

template <bool kVec4>
__global__ void __launch_bounds__(kThreads) rms_norm_kernel(const float* x, const float* w, float* y, int64_t cols, float eps) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  using BlockReduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ float row_scale;

  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;

  double ss = 0;
  if constexpr (kVec4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    for (int64_t i = threadIdx.x; i < cols / 4; i += kThreads) {
      const float4 v = x4[i];
      ss += static_cast<double>(v.x) * v.x + static_cast<double>(v.y) * v.y + static_cast<double>(v.z) * v.z +
            static_cast<double>(v.w) * v.w;
    }
  } else {
    for (int64_t i = threadIdx.x; i < cols; i += kThreads) ss += static_cast<double>(xr[i]) * xr[i];
  }
  ss = BlockReduce(tmp).Sum(ss);  // valid in thread 0 only
  if (threadIdx.x == 0) row_scale = static_cast<float>(1.0 / sqrt(ss / static_cast<double>(cols) + static_cast<double>(eps)));
  __syncthreads();
  const float scale = row_scale;

  if constexpr (kVec4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* y4 = reinterpret_cast<float4*>(yr);
    for (int64_t i = threadIdx.x; i < cols / 4; i += kThreads) {
      const float4 v = x4[i], g = w4[i];
      y4[i] = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
    }
  } else {
    for (int64_t i = threadIdx.x; i < cols; i += kThreads) yr[i] = xr[i] * scale * w[i];
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  if (rows < 0 || cols <= 0) fail("CUDA kernel rms_norm: bad shape ", rows, " x ", cols);
  if (rows == 0) return;
  if (!x || !w || !y) fail("CUDA kernel rms_norm: null pointer");
  if (!(eps >= 0.0f)) fail("CUDA kernel rms_norm: eps must be >= 0 (got ", eps, ")");
  const unsigned grid = grid_1d(rows, 1, "rms_norm");  // one CTA per row
  if (cols % 4 == 0 && aligned16(x) && aligned16(w) && aligned16(y))
    launch_pdl("rms_norm", rms_norm_kernel<true>, grid, kThreads, 0, s, x, w, y, cols, eps);
  else
    launch_pdl("rms_norm", rms_norm_kernel<false>, grid, kThreads, 0, s, x, w, y, cols, eps);
}

}  // namespace minfer::cuda
