// RoPE (NeoX layout). For a row at position p and pair index i in [0, d/2):
//   theta_i = p * base^(-2i/d);  (x0, x1) = (x[i], x[i + d/2])
//   y[i] = x0 cos(theta_i) - x1 sin(theta_i);  y[i + d/2] = x0 sin(theta_i) + x1 cos(theta_i)
// The angle and its cos/sin are computed in double and rounded to float, exactly as
// cpu::rope_neox does: at p ~ 10^4 a float angle would already be off by ~1e-3 rad, and the
// two backends must agree. That costs one double pow + sincos per (row, i), done once per CTA
// into a shared table and reused by every head of the row.
// Thread-to-data: one CTA per row. Phase 1: thread t fills cos/sin[t] for pairs t < d/2.
// Phase 2: thread t rotates pairs j = t, t + 256, ... over the row's n_heads * d/2 pairs, with
// head h = j / (d/2), i = j % (d/2): consecutive threads touch consecutive floats (coalesced).
#include "cuda/rope.h"

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxHalf = 128;  // head_dim <= 256

__global__ void __launch_bounds__(kThreads)
    rope_neox_kernel(const float* x, const int32_t* pos, float* y, int64_t n_heads, int half, double base) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  __shared__ float cs[kMaxHalf], sn[kMaxHalf];
  const int64_t row = blockIdx.x;
  const int64_t cols = n_heads * 2 * half;
  const double p = static_cast<double>(pos[row]);
  for (int i = threadIdx.x; i < half; i += kThreads) {
    // inv_freq = base^(-2i/d) as HF (and the CPU twin) compute it.
    const double inv_freq = pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(2 * half));
    double sd, cd;
    sincos(p * inv_freq, &sd, &cd);
    cs[i] = static_cast<float>(cd);
    sn[i] = static_cast<float>(sd);
  }
  __syncthreads();
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  const int64_t n_pairs = n_heads * half;
  for (int64_t j = threadIdx.x; j < n_pairs; j += kThreads) {
    const int64_t h = j / half;
    const int i = static_cast<int>(j - h * half);
    const int64_t o = h * 2 * half + i;
    const float x0 = xr[o], x1 = xr[o + half];
    yr[o] = x0 * cs[i] - x1 * sn[i];
    yr[o + half] = x0 * sn[i] + x1 * cs[i];
  }
}

}  // namespace

void rope_neox(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
               double base, cudaStream_t s) {
  if (rows < 0 || n_heads <= 0) fail("CUDA kernel rope_neox: bad shape rows=", rows, " n_heads=", n_heads);
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > 2 * kMaxHalf)
    fail("CUDA kernel rope_neox: head_dim must be even and <= ", 2 * kMaxHalf, " (got ", head_dim, ")");
  if (!(base > 0.0)) fail("CUDA kernel rope_neox: base must be > 0 (got ", base, ")");
  if (rows == 0) return;
  if (!x || !pos || !y) fail("CUDA kernel rope_neox: null pointer");
  const unsigned grid = grid_1d(rows, 1, "rope_neox");  // one CTA per row
  launch_pdl("rope_neox", rope_neox_kernel, grid, kThreads, 0, s, x, pos, y, n_heads, static_cast<int>(head_dim / 2),
             base);
}

}  // namespace minfer::cuda
