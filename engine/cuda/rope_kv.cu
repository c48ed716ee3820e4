// Fused decode RoPE (NeoX) of q and k + KV-cache write of k_rope and v, for one token at p = pos[0]:
//   theta_i = p * base^(-2i/d);  (x0, x1) = (x[i], x[i + d/2]) in each head
//   y[i] = x0 cos(theta_i) - x1 sin(theta_i);  y[i + d/2] = x0 sin(theta_i) + x1 cos(theta_i)
//   k_cache[p][:] = k_rope, v_cache[p][:] = v   (when 0 <= p < n_ctx)
// The cos/sin table and the rotation are rope.cu's expressions, unchanged (angle, pow and sincos in
// double, rounded to float; the rotation in float written the same way), so q_rope/k_rope equal
// rope_neox's output bit for bit, and the cache rows equal kv_store's copy of them.
// Thread-to-data: one CTA of 64 threads per head: CTAs 0 .. n_head-1 take the q heads,
// n_head .. n_head+n_head_kv-1 the k heads. Phase 1: thread t fills cos/sin[i] for i = t, t + 64,
// ... < d/2 (shared). Phase 2: thread t rotates pairs i = t, t + 64, ... of its head; a k head also
// stores both rotated values into the cache row and copies its head's v slice (elements t, t + 64,
// ... of the head) into v_cache. Reads and writes are consecutive floats across threads.
#include "cuda/rope_kv.h"

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 64;
constexpr int kMaxHalf = 128;  // head_dim <= 256

__global__ void __launch_bounds__(kThreads)
    rope_kv_store_kernel(const float* q, const float* k, const float* __restrict__ v, const int32_t* __restrict__ pos,
                         int n_head, int half, double base, float* q_rope, float* k_rope,
                         float* __restrict__ k_cache, float* __restrict__ v_cache, int64_t n_ctx) {
  pdl_wait();  // PDL: first, before reading pos, q, k, v and writing anything (pdl.cuh)
  pdl_launch_dependents();
  __shared__ float cs[kMaxHalf], sn[kMaxHalf];
  const int head_dim = 2 * half;
  const int64_t p_raw = pos[0];
  const double p = static_cast<double>(pos[0]);
  for (int i = threadIdx.x; i < half; i += kThreads) {
    // inv_freq = base^(-2i/d) as HF (and the CPU twin) compute it: rope.cu's lines.
    const double inv_freq = pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(2 * half));
    double sd, cd;
    sincos(p * inv_freq, &sd, &cd);
    cs[i] = static_cast<float>(cd);
    sn[i] = static_cast<float>(sd);
  }
  __syncthreads();
  const bool is_k = static_cast<int>(blockIdx.x) >= n_head;
  const int h = is_k ? static_cast<int>(blockIdx.x) - n_head : static_cast<int>(blockIdx.x);
  const int64_t off = static_cast<int64_t>(h) * head_dim;  // the head's first element in its row
  const float* xr = (is_k ? k : q) + off;
  float* yr = (is_k ? k_rope : q_rope) + off;
  const int64_t n_embd_kv = static_cast<int64_t>(gridDim.x - n_head) * head_dim;
  const bool store = is_k && p_raw >= 0 && p_raw < n_ctx;
  float* kc = store ? k_cache + p_raw * n_embd_kv + off : nullptr;
  for (int i = threadIdx.x; i < half; i += kThreads) {
    const float x0 = xr[i], x1 = xr[i + half];
    const float y0 = x0 * cs[i] - x1 * sn[i];
    const float y1 = x0 * sn[i] + x1 * cs[i];
    yr[i] = y0;
    yr[i + half] = y1;
    if (store) {
      kc[i] = y0;
      kc[i + half] = y1;
    }
  }
  if (store) {
    const float* vr = v + off;
    float* vc = v_cache + p_raw * n_embd_kv + off;
    for (int i = threadIdx.x; i < head_dim; i += kThreads) vc[i] = vr[i];
  }
}

}  // namespace

void rope_kv_store(const float* q, const float* k, const float* v, const int32_t* pos, int64_t n_head,
                   int64_t n_head_kv, int64_t head_dim, double base, float* q_rope, float* k_rope,
                   float* k_cache, float* v_cache, int64_t n_ctx, cudaStream_t s) {
  constexpr const char* kernel = "rope_kv_store_kernel";
  if (n_head <= 0 || n_head_kv <= 0 || n_ctx <= 0)
    fail("CUDA kernel ", kernel, ": bad shape n_head=", n_head, " n_head_kv=", n_head_kv, " n_ctx=", n_ctx);
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > 2 * kMaxHalf)
    fail("CUDA kernel ", kernel, ": head_dim must be even and <= ", 2 * kMaxHalf, " (got ", head_dim, ")");
  if (!(base > 0.0)) fail("CUDA kernel ", kernel, ": base must be > 0 (got ", base, ")");
  if (!q || !k || !v || !pos || !q_rope || !k_rope || !k_cache || !v_cache)
    fail("CUDA kernel ", kernel, ": null pointer");
  if (n_head > (1 << 20) || n_head_kv > (1 << 20))
    fail("CUDA kernel ", kernel, ": too many heads (", n_head, " + ", n_head_kv, ")");
  const unsigned grid = grid_1d(n_head + n_head_kv, 1, kernel);  // one CTA per head
  launch_pdl(kernel, rope_kv_store_kernel, grid, kThreads, 0, s, q, k, v, pos, static_cast<int>(n_head),
             static_cast<int>(head_dim / 2), base, q_rope, k_rope, k_cache, v_cache, n_ctx);
}

}  // namespace minfer::cuda
