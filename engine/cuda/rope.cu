// RoPE, NeoX or normal layout (rope_device.cuh has the math). For a row at position p and pair
// index i in [0, d/2) with values (x0, x1) at the layout's two offsets:
//   theta_i = p * base^(-2i/d) [/ freq_divisors[i]]
//   y0 = x0 cos(theta_i) - x1 sin(theta_i);  y1 = x0 sin(theta_i) + x1 cos(theta_i)
// The angle and its cos/sin are computed in double and rounded to float, exactly as cpu::rope_*
// does: at p ~ 10^4 a float angle would already be off by ~1e-3 rad, and the two backends must
// agree. That costs one double pow + sincos per (row, i), done once per CTA into a shared table
// and reused by every head of the row.
// Thread-to-data: one CTA per row. Phase 1: thread t fills cos/sin[t] for pairs t < d/2.
// Phase 2: thread t rotates pairs j = t, t + 256, ... over the row's n_heads * d/2 pairs, with
// head h = j / (d/2), i = j % (d/2): NeoX, consecutive threads touch consecutive floats in each
// half of a head; normal, consecutive float pairs (both coalesced).
#include "cuda/rope.h"

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"
#include "cuda/rope_device.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxHalf = 128;  // head_dim <= 256

template <RopeMode M>
__device__ __forceinline__ void rope_row(const float* x, const int32_t* pos, float* y, int64_t n_heads, int half,
                                         double base, const float* freq_divisors) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  __shared__ float cs[kMaxHalf], sn[kMaxHalf];
  const int64_t row = blockIdx.x;
  const int64_t cols = n_heads * 2 * half;
  const double p = static_cast<double>(pos[row]);
  for (int i = threadIdx.x; i < half; i += kThreads) rope_cos_sin(p, i, half, base, freq_divisors, cs[i], sn[i]);
  __syncthreads();
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  const int64_t n_pairs = n_heads * half;
  for (int64_t j = threadIdx.x; j < n_pairs; j += kThreads) {
    const int64_t h = j / half;
    const int i = static_cast<int>(j - h * half);
    const int64_t a = h * 2 * half + rope_first<M>(i), b = h * 2 * half + rope_second<M>(i, half);
    rope_rotate(xr[a], xr[b], cs[i], sn[i], yr[a], yr[b]);
  }
}

// One kernel per layout, named for the kernel timeline.
__global__ void __launch_bounds__(kThreads) rope_neox_kernel(const float* x, const int32_t* pos, float* y,
                                                             int64_t n_heads, int half, double base,
                                                             const float* freq_divisors) {
  rope_row<RopeMode::NeoX>(x, pos, y, n_heads, half, base, freq_divisors);
}
__global__ void __launch_bounds__(kThreads) rope_normal_kernel(const float* x, const int32_t* pos, float* y,
                                                               int64_t n_heads, int half, double base,
                                                               const float* freq_divisors) {
  rope_row<RopeMode::Normal>(x, pos, y, n_heads, half, base, freq_divisors);
}

using RopeKernel = void (*)(const float*, const int32_t*, float*, int64_t, int, double, const float*);

void launch_rope(RopeKernel kernel, const char* name, const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads,
                 int64_t head_dim, double base, cudaStream_t s, const float* freq_divisors) {
  if (rows < 0 || n_heads <= 0) fail("CUDA kernel ", name, ": bad shape rows=", rows, " n_heads=", n_heads);
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > 2 * kMaxHalf)
    fail("CUDA kernel ", name, ": head_dim must be even and <= ", 2 * kMaxHalf, " (got ", head_dim, ")");
  if (!(base > 0.0)) fail("CUDA kernel ", name, ": base must be > 0 (got ", base, ")");
  if (rows == 0) return;
  if (!x || !pos || !y) fail("CUDA kernel ", name, ": null pointer");
  const unsigned grid = grid_1d(rows, 1, name);  // one CTA per row
  launch_pdl(name, kernel, grid, kThreads, 0, s, x, pos, y, n_heads, static_cast<int>(head_dim / 2), base,
             freq_divisors);
}

}  // namespace

void rope_neox(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
               double base, cudaStream_t s, const float* freq_divisors) {
  launch_rope(rope_neox_kernel, "rope_neox", x, pos, y, rows, n_heads, head_dim, base, s, freq_divisors);
}

void rope_normal(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
                 double base, cudaStream_t s, const float* freq_divisors) {
  launch_rope(rope_normal_kernel, "rope_normal", x, pos, y, rows, n_heads, head_dim, base, s, freq_divisors);
}

}  // namespace minfer::cuda
