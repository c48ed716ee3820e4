// Fused decode RoPE + KV-cache write (one token): q_rope = rope_neox(q), k_rope = rope_neox(k),
// k_cache[pos[0]] = k_rope, v_cache[pos[0]] = v, in ONE launch, with q_rope and k_rope still
// written to their own buffers (the nodes the trace shows). Equal, bit for bit, to the unfused
// reference rope_neox(q), rope_neox(k), kv_store(k_rope, v) (same double cos/sin, same float
// rotation). Test: engine/tests/test_cuda_rope_kv.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

// q: [n_head * head_dim], k, v: [n_head_kv * head_dim] f32 (one token); pos: DEVICE int32, the
// token's position pos[0], read on the device (a captured decode graph follows the live
// position); head_dim even, <= 256. k_cache, v_cache: [n_ctx][n_head_kv * head_dim]; a position
// outside [0, n_ctx) rotates q and k but writes no cache row (as kv_store). q_rope may alias q
// and k_rope may alias k (each pair is read before it is written by the same thread); nothing
// else may overlap. Graph-capturable.
void rope_kv_store(const float* q, const float* k, const float* v, const int32_t* pos, int64_t n_head,
                   int64_t n_head_kv, int64_t head_dim, double base, float* q_rope, float* k_rope,
                   float* k_cache, float* v_cache, int64_t n_ctx, cudaStream_t s);

}  // namespace minfer::cuda
