// Causal grouped-query attention over the f32 KV cache. CPU twin: cpu::attention.
//   q, out: [rows][n_head * head_dim];  k_cache, v_cache: [n_ctx][n_head_kv * head_dim];
//   pos: DEVICE int32 [rows]. Query row r at position pos[r] attends cache rows [0, pos[r]]
//   (the caller has stored them, this step's included); q head h reads KV head
//   h / (n_head / n_head_kv); scale 1/sqrt(head_dim); online softmax, in f32 (but see
//   attention_prefill_mma: f16 tensor-core inputs for the prefill at head_dim 64 and 128).
// head_dim <= 256; n_head a multiple of n_head_kv. Graph-capturable launchers.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

// Prefill: any number of rows. The caller keeps every pos[r] inside the cache. Dispatch by shape
// (a documented choice, not a fallback): head_dim 64 and 128 (the Qwen2 family) take the
// tensor-core kernel below, every other head_dim the f32 kernel (attention.cu).
void attention_prefill(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                       int64_t rows, int64_t n_head, int64_t n_head_kv, int64_t head_dim, cudaStream_t s);

// Whether attention_prefill takes the tensor-core kernel for this head_dim.
bool attention_prefill_uses_mma(int64_t head_dim);

// The tensor-core prefill (attention_prefill_mma.cu): flash-attention-2 style, same contract as
// attention_prefill, head_dim 64 or 128 only. Q, K, V and the softmax weights are rounded to f16
// for the tensor cores (f32 scores, softmax and accumulation): ~1e-3 relative difference from the
// f32 twin, and |q|, |k|, |v| must stay below 65504 (f16 range). q, k_cache, v_cache and out
// must be 16-byte aligned.
void attention_prefill_mma(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                           int64_t rows, int64_t n_head, int64_t n_head_kv, int64_t head_dim, cudaStream_t s);

// Decode: one query row. The KV length pos[0] + 1 is read from device memory (the decode step is
// one CUDA graph replayed for every token). Split over the KV length: the grid covers max_ctx
// (the reserved context) in chunks of attention_decode_chunk() positions; chunks past the live
// length exit at once; each live chunk leaves its partial (max, sum, acc) in `scratch`, and the
// last of a head's chunks to finish merges them (one launch); at head_dim 64 and 128 with up to 8
// query heads per KV head, one CTA computes a chunk for a whole group (attention_decode_gqa.h). `tickets`: attention_decode_tickets()
// counters, zeroed once before the first launch (every launch leaves them zeroed); launches that
// may overlap need their own. A pos[0] >= max_ctx is clamped to max_ctx - 1; a negative one
// gives a zero output (no keys), as the CPU twin does.
int64_t attention_decode_chunk();
int64_t attention_decode_scratch_floats(int64_t n_head, int64_t head_dim, int64_t max_ctx);
int64_t attention_decode_tickets(int64_t n_head);
void attention_decode(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                      int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t max_ctx, float* scratch,
                      unsigned int* tickets, cudaStream_t s);

}  // namespace minfer::cuda
