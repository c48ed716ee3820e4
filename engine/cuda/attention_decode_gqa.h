// The decode attention for grouped queries (attention_decode_gqa.cu): a CTA per (chunk of keys,
// KV head) computes several query heads of the group (all of them at long contexts), so each K
// and V row of the chunk is read once per CTA instead of once per query head. attention_decode (attention.cu) takes it when
// attention_decode_gqa_usable says so, with the same arguments, scratch and tickets (their sizes
// from attention.h; the scratch layout is each kernel's own). Internal to engine/cuda.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

// head_dim 64 or 128, at most kGqaMaxGroup query heads per KV head, and q, the caches, out and
// scratch 16-byte aligned.
constexpr int64_t kGqaMaxGroup = 8;
bool attention_decode_gqa_usable(const float* q, const float* k_cache, const float* v_cache, const float* out,
                                 const float* scratch, int64_t n_head, int64_t n_head_kv, int64_t head_dim);

// Whether a CTA of the kernel takes more than one head at some live length up to max_ctx. When it
// never does, every live CTA runs the per-head chunk step (attention_chunk.cuh), and attention.cu's
// per-head kernel computes the same bits with a far smaller footprint: attention_decode takes it.
bool attention_decode_gqa_shares_heads(int64_t n_head, int64_t n_head_kv, int64_t max_ctx);

// The launch; the caller has checked the arguments and attention_decode_gqa_usable. chunk: the
// keys per CTA (attention_decode_chunk()).
void attention_decode_gqa(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                          int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t max_ctx, float* scratch,
                          unsigned int* tickets, float scale, cudaStream_t s);

}  // namespace minfer::cuda
