// Per-head RMSNorm, for each (row, head) h of head_dim values x_h:
//   ss = sum_c x_h[c]^2 (double);  scale = f32(1 / sqrt(ss / head_dim + eps));  y_h[c] = x_h[c] * scale * w[c]
// head_norm.cuh holds the device code (shared with rope_kv.cu's fused QK-norm, bit for bit).
// The sum is in double as cpu::rms_norm (and rms_norm.cu) accumulate it.
// Thread-to-data: one warp per (row, head), 8 warps per CTA of 256 threads: warp w of CTA b takes
// head-row b * 8 + w of the rows * n_heads; lane l reads x[l], x[l + 32], ... of its head
// (consecutive lanes, consecutive floats), reduces with shuffles, then writes the same elements.
// A head of 128 values is 4 loads per lane: a CTA per head (rms_norm over rows * n_heads rows)
// would leave 7 of its 8 warps idle.
#include "cuda/head_rms_norm.h"

#include "cuda/cuda_check.h"
#include "cuda/head_norm.cuh"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__global__ void __launch_bounds__(kThreads)
    head_rms_norm_kernel(const float* x, const float* __restrict__ w, float* y, int64_t n_head_rows, int head_dim,
                         float eps) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  const int64_t hr = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (hr >= n_head_rows) return;  // whole warps: the shuffles below see all 32 lanes
  const float* xh = x + hr * head_dim;
  float* yh = y + hr * head_dim;
  const float scale = head_rms_scale(xh, head_dim, eps);  // every read of xh is done (shuffles) before a write
  for (int c = static_cast<int>(threadIdx.x % 32); c < head_dim; c += 32) yh[c] = head_rms_apply(xh[c], scale, w[c]);
}

}  // namespace

void head_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
                   float eps, cudaStream_t s) {
  constexpr const char* kernel = "head_rms_norm";
  if (rows < 0 || n_heads <= 0 || head_dim <= 0 || head_dim > (1 << 20))
    fail("CUDA kernel ", kernel, ": bad shape rows=", rows, " n_heads=", n_heads, " head_dim=", head_dim);
  if (!(eps >= 0.0f)) fail("CUDA kernel ", kernel, ": eps must be >= 0 (got ", eps, ")");
  if (rows == 0) return;
  if (!x || !w || !y) fail("CUDA kernel ", kernel, ": null pointer");
  const int64_t n_head_rows = rows * n_heads;
  const unsigned grid = grid_1d(n_head_rows, kWarps, kernel);  // one warp per (row, head)
  launch_pdl(kernel, head_rms_norm_kernel, grid, kThreads, 0, s, x, w, y, n_head_rows, static_cast<int>(head_dim), eps);
}

}  // namespace minfer::cuda
