// Fused decode [QK-norm +] RoPE + KV-cache write (one token), in ONE launch:
//   [q_normed = head_rms_norm(q, q_norm_w), k_normed = head_rms_norm(k, k_norm_w)]   (qwen3)
//   q_rope = rope(q_normed or q), k_rope = rope(k_normed or k)      (NeoX or normal layout,
//                                                                    optional frequency divisors)
//   k_cache[pos[0]] = k_rope, v_cache[pos[0]] = v
// with every intermediate still written to its own buffer (the nodes the trace shows). Equal,
// bit for bit, to the unfused reference head_rms_norm, rope_neox / rope_normal, kv_store (the same
// device code: head_norm.cuh, rope_device.cuh). Test: engine/tests/test_cuda_rope_kv.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "model/architecture.h"

namespace minfer::cuda {

struct RopeKvStore {
  // q: [n_head * head_dim], k, v: [n_head_kv * head_dim] f32 (one token); pos: DEVICE int32, the
  // token's position pos[0], read on the device (a captured decode graph follows the live position).
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const int32_t* pos = nullptr;
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;  // head_dim even, <= 256
  double base = 0;
  RopeMode mode = RopeMode::NeoX;
  const float* freq_divisors = nullptr;  // DEVICE f32 [head_dim/2] (rope_freqs.weight), or null
  // The QK-norm prologue, when q_norm_w is set (then k_norm_w, q_normed and k_normed must be too):
  // weights DEVICE f32 [head_dim]; the normalised q and k are written to q_normed / k_normed.
  const float* q_norm_w = nullptr;
  const float* k_norm_w = nullptr;
  float eps = 0;
  float* q_normed = nullptr;
  float* k_normed = nullptr;
  // Outputs. k_cache, v_cache: [n_ctx][n_head_kv * head_dim]; a position outside [0, n_ctx)
  // rotates q and k but writes no cache row (as kv_store). q_normed and q_rope may alias q, and
  // k_normed and k_rope may alias k (a head is read whole before any of it is written); nothing
  // else may overlap.
  float* q_rope = nullptr;
  float* k_rope = nullptr;
  float* k_cache = nullptr;
  float* v_cache = nullptr;
  int64_t n_ctx = 0;
};

// Graph-capturable.
void rope_kv_store(const RopeKvStore& a, cudaStream_t s);

// The plain NeoX form (Qwen2): no norm, no divisors.
void rope_kv_store(const float* q, const float* k, const float* v, const int32_t* pos, int64_t n_head,
                   int64_t n_head_kv, int64_t head_dim, double base, float* q_rope, float* k_rope,
                   float* k_cache, float* v_cache, int64_t n_ctx, cudaStream_t s);

}  // namespace minfer::cuda
