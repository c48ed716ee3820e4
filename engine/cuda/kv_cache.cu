// KV cache write: k_cache[pos[r]][:] = k[r][:], v_cache[pos[r]][:] = v[r][:]; rows whose
// position lies outside [0, n_ctx) are skipped.
// Thread-to-data: the row is cut into ceil(n_embd_kv/4) slots of 4 floats; global thread t owns
// slot t % slots of row t / slots and moves it for both K and V (one float4 each way when the
// row width is a multiple of 4 and the pointers 16-byte aligned). Consecutive threads cover
// consecutive floats of a row: coalesced reads and writes.
#include "cuda/kv_cache.h"

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void kv_store_kernel(const float* k, const float* v, const int32_t* pos, int64_t rows, int64_t cols,
                                int64_t slots, float* k_cache, float* v_cache, int64_t n_ctx, bool vec4) {
  pdl_wait();  // PDL: first, before the early returns and any global read or write (pdl.cuh)
  pdl_launch_dependents();
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * slots) return;
  const int64_t r = t / slots;
  const int64_t c0 = (t - r * slots) * 4;
  const int64_t p = pos[r];
  if (p < 0 || p >= n_ctx) return;  // out of the cache: skipped, never written out of bounds
  const float* kr = k + r * cols;
  const float* vr = v + r * cols;
  float* kc = k_cache + p * cols;
  float* vc = v_cache + p * cols;
  if (vec4) {
    *reinterpret_cast<float4*>(kc + c0) = *reinterpret_cast<const float4*>(kr + c0);
    *reinterpret_cast<float4*>(vc + c0) = *reinterpret_cast<const float4*>(vr + c0);
    return;
  }
  for (int64_t c = c0; c < cols && c < c0 + 4; ++c) {
    kc[c] = kr[c];
    vc[c] = vr[c];
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

void kv_store(const float* k, const float* v, const int32_t* pos, int64_t rows, int64_t n_embd_kv, float* k_cache,
              float* v_cache, int64_t n_ctx, cudaStream_t s) {
  if (rows < 0 || n_embd_kv <= 0 || n_ctx <= 0)
    fail("CUDA kernel kv_store: bad shape rows=", rows, " n_embd_kv=", n_embd_kv, " n_ctx=", n_ctx);
  if (rows == 0) return;
  if (!k || !v || !pos || !k_cache || !v_cache) fail("CUDA kernel kv_store: null pointer");
  const int64_t slots = (n_embd_kv + 3) / 4;
  const bool vec4 = n_embd_kv % 4 == 0 && aligned16(k) && aligned16(v) && aligned16(k_cache) && aligned16(v_cache);
  const unsigned grid = grid_1d(rows * slots, kThreads, "kv_store");
  launch_pdl("kv_store", kv_store_kernel, grid, kThreads, 0, s, k, v, pos, rows, n_embd_kv, slots, k_cache, v_cache,
             n_ctx, vec4);
}

}  // namespace minfer::cuda
