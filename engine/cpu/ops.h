// CPU kernels for the non-matmul ops (matmuls are in cpu/matmul.h). Activations token-major
// [rows][cols] f32. These are also the CPU counterparts the CUDA kernels are tested against.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "model/model.h"

namespace minfer::cpu {

// y = x / sqrt(mean(x^2) + eps) * w, per row.
void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps,
              ThreadPool& pool);
// Per-head RMSNorm (qwen3's Q/K norm): rms_norm over each head's head_dim values, the same
// weight {head_dim} for every head. x, y [rows][n_heads * head_dim].
void head_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
                   float eps, ThreadPool& pool);
// NeoX rotary embedding: in each head, element i pairs with i + head_dim/2. freq_divisors
// (head_dim/2 values, rope_freqs.weight) divide the base frequencies when not null.
void rope_neox(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads,
               int64_t head_dim, double base, ThreadPool& pool, const float* freq_divisors = nullptr);
// ggml's "normal" rotary embedding (Llama): in each head, element 2i pairs with 2i + 1.
void rope_normal(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads,
                 int64_t head_dim, double base, ThreadPool& pool, const float* freq_divisors = nullptr);
// Causal GQA attention of q rows (positions pos[r]) over cached k/v rows [0, pos[r]].
// k_cache/v_cache: [n_ctx][n_head_kv*head_dim].
void attention(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache,
               float* out, int64_t rows, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
               ThreadPool& pool);
void add(const float* a, const float* b, float* y, int64_t n);
void add_bias(const float* x, const float* bias, float* y, int64_t rows, int64_t cols);
void silu(const float* x, float* y, int64_t n);
void mul(const float* a, const float* b, float* y, int64_t n);
void swiglu(const float* gate, const float* up, float* y, int64_t n);
// Embedding rows for the token ids (any weight type; dequantized to f32).
void get_rows(const WeightView& w, const int32_t* ids, int64_t n, float* y);
// A small f32 vector weight (norm, bias) of any float type.
void weight_to_f32(const WeightView& w, float* y);

}  // namespace minfer::cpu
