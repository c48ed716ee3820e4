// Fused decode [QK-norm +] RoPE of q and k + KV-cache write of k_rope and v, for one token at
// p = pos[0]:
//   [x = x * scale_h * w per head h, scale_h = f32(1 / sqrt(mean_h(x^2) + eps))]   (qwen3's QK-norm)
//   theta_i = p * base^(-2i/d) [/ freq_divisors[i]];  (x0, x1) = the layout's pair i in each head
//   y0 = x0 cos(theta_i) - x1 sin(theta_i);  y1 = x0 sin(theta_i) + x1 cos(theta_i)
//   k_cache[p][:] = k_rope, v_cache[p][:] = v   (when 0 <= p < n_ctx)
// The norm is head_rms_norm.cu's device code (head_norm.cuh) and the cos/sin table and rotation
// rope.cu's (rope_device.cuh), unchanged, so every output equals the unfused kernels' bit for
// bit, and the cache rows equal kv_store's copy of them.
// Thread-to-data: one CTA of 64 threads (2 warps) per head: CTAs 0 .. n_head-1 take the q heads,
// n_head .. n_head+n_head_kv-1 the k heads. Phase 1: thread t fills cos/sin[i] for i = t, t + 64,
// ... < d/2 (shared); with the norm, each warp also computes its head's scale (both warps the
// same value, as head_rms_norm's one warp does). Phase 2: thread t takes pairs i = t, t + 64, ...
// of its head: normalises both values (and writes them), rotates them; a k head also stores both
// rotated values into the cache row and copies its head's v slice (elements t, t + 64, ... of the
// head) into v_cache. Reads and writes are consecutive floats across threads.
#include "cuda/rope_kv.h"

#include "cuda/cuda_check.h"
#include "cuda/head_norm.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rope_device.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 64;
constexpr int kMaxHalf = 128;  // head_dim <= 256

struct Args {
  const float* q;
  const float* k;
  const float* v;
  const int32_t* pos;
  const float* freq_divisors;
  const float* q_norm_w;
  const float* k_norm_w;
  float* q_normed;
  float* k_normed;
  float* q_rope;
  float* k_rope;
  float* k_cache;
  float* v_cache;
  int64_t n_ctx;
  double base;
  float eps;
  int n_head, half;
};

template <RopeMode M, bool kNorm>
__global__ void __launch_bounds__(kThreads) rope_kv_store_kernel(const Args a) {
  pdl_wait();  // PDL: first, before reading pos, q, k, v and writing anything (pdl.cuh)
  pdl_launch_dependents();
  __shared__ float cs[kMaxHalf], sn[kMaxHalf];
  const int half = a.half, head_dim = 2 * half;
  const int64_t p_raw = a.pos[0];
  const double p = static_cast<double>(p_raw);
  for (int i = threadIdx.x; i < half; i += kThreads) rope_cos_sin(p, i, half, a.base, a.freq_divisors, cs[i], sn[i]);
  const bool is_k = static_cast<int>(blockIdx.x) >= a.n_head;
  const int h = is_k ? static_cast<int>(blockIdx.x) - a.n_head : static_cast<int>(blockIdx.x);
  const int64_t off = static_cast<int64_t>(h) * head_dim;  // the head's first element in its row
  const float* xr = (is_k ? a.k : a.q) + off;
  float* yr = (is_k ? a.k_rope : a.q_rope) + off;
  float scale = 0.0f;
  const float* nw = nullptr;
  float* nr = nullptr;
  if constexpr (kNorm) {
    nw = is_k ? a.k_norm_w : a.q_norm_w;
    nr = (is_k ? a.k_normed : a.q_normed) + off;
    scale = head_rms_scale(xr, head_dim, a.eps);  // each warp, the whole head: the same value in both
  }
  // The table is complete, and (norm) every read of the head for its scale is done before any
  // write below (outputs may alias the input).
  __syncthreads();
  const int64_t n_embd_kv = static_cast<int64_t>(gridDim.x - a.n_head) * head_dim;
  const bool store = is_k && p_raw >= 0 && p_raw < a.n_ctx;
  float* kc = store ? a.k_cache + p_raw * n_embd_kv + off : nullptr;
  for (int i = threadIdx.x; i < half; i += kThreads) {
    const int ia = rope_first<M>(i), ib = rope_second<M>(i, half);
    float x0 = xr[ia], x1 = xr[ib];
    if constexpr (kNorm) {
      x0 = head_rms_apply(x0, scale, nw[ia]);
      x1 = head_rms_apply(x1, scale, nw[ib]);
      nr[ia] = x0;
      nr[ib] = x1;
    }
    float y0, y1;
    rope_rotate(x0, x1, cs[i], sn[i], y0, y1);
    yr[ia] = y0;
    yr[ib] = y1;
    if (store) {
      kc[ia] = y0;
      kc[ib] = y1;
    }
  }
  if (store) {
    const float* vr = a.v + off;
    float* vc = a.v_cache + p_raw * n_embd_kv + off;
    for (int i = threadIdx.x; i < head_dim; i += kThreads) vc[i] = vr[i];
  }
}

}  // namespace

void rope_kv_store(const RopeKvStore& a, cudaStream_t s) {
  constexpr const char* kernel = "rope_kv_store_kernel";
  if (a.n_head <= 0 || a.n_head_kv <= 0 || a.n_ctx <= 0)
    fail("CUDA kernel ", kernel, ": bad shape n_head=", a.n_head, " n_head_kv=", a.n_head_kv, " n_ctx=", a.n_ctx);
  if (a.head_dim <= 0 || a.head_dim % 2 != 0 || a.head_dim > 2 * kMaxHalf)
    fail("CUDA kernel ", kernel, ": head_dim must be even and <= ", 2 * kMaxHalf, " (got ", a.head_dim, ")");
  if (!(a.base > 0.0)) fail("CUDA kernel ", kernel, ": base must be > 0 (got ", a.base, ")");
  if (!a.q || !a.k || !a.v || !a.pos || !a.q_rope || !a.k_rope || !a.k_cache || !a.v_cache)
    fail("CUDA kernel ", kernel, ": null pointer");
  const bool norm = a.q_norm_w != nullptr;
  if (norm != (a.k_norm_w != nullptr) || norm != (a.q_normed != nullptr) || norm != (a.k_normed != nullptr))
    fail("CUDA kernel ", kernel, ": the QK-norm needs both weights and both outputs, or none of them");
  if (norm && !(a.eps >= 0.0f)) fail("CUDA kernel ", kernel, ": eps must be >= 0 (got ", a.eps, ")");
  if (a.n_head > (1 << 20) || a.n_head_kv > (1 << 20))
    fail("CUDA kernel ", kernel, ": too many heads (", a.n_head, " + ", a.n_head_kv, ")");
  const unsigned grid = grid_1d(a.n_head + a.n_head_kv, 1, kernel);  // one CTA per head
  const Args k{a.q,        a.k,        a.v,      a.pos,    a.freq_divisors, a.q_norm_w, a.k_norm_w,
               a.q_normed, a.k_normed, a.q_rope, a.k_rope, a.k_cache,       a.v_cache,  a.n_ctx,
               a.base,     a.eps,      static_cast<int>(a.n_head), static_cast<int>(a.head_dim / 2)};
  const bool neox = a.mode == RopeMode::NeoX;
  auto* fn = neox ? (norm ? rope_kv_store_kernel<RopeMode::NeoX, true> : rope_kv_store_kernel<RopeMode::NeoX, false>)
                  : (norm ? rope_kv_store_kernel<RopeMode::Normal, true> : rope_kv_store_kernel<RopeMode::Normal, false>);
  launch_pdl(kernel, fn, grid, kThreads, 0, s, k);
}

void rope_kv_store(const float* q, const float* k, const float* v, const int32_t* pos, int64_t n_head,
                   int64_t n_head_kv, int64_t head_dim, double base, float* q_rope, float* k_rope,
                   float* k_cache, float* v_cache, int64_t n_ctx, cudaStream_t s) {
  RopeKvStore a;
  a.q = q, a.k = k, a.v = v, a.pos = pos;
  a.n_head = n_head, a.n_head_kv = n_head_kv, a.head_dim = head_dim, a.base = base;
  a.q_rope = q_rope, a.k_rope = k_rope, a.k_cache = k_cache, a.v_cache = v_cache, a.n_ctx = n_ctx;
  rope_kv_store(a, s);
}

}  // namespace minfer::cuda
