// Causal GQA attention, f32, online softmax. For one query q (head h, position p) over keys
// t = 0..p of KV head kvh = h / (n_head / n_head_kv):
//   s_t = (q . k_t) / sqrt(d);   out = sum_t softmax(s)_t v_t
// computed chunk by chunk (flash-attention style). A chunk of up to 128 keys gives
//   m_c = max_t s_t,  l_c = sum_t e^(s_t - m_c),  acc_c = sum_t e^(s_t - m_c) v_t
// and two partial results merge exactly: m = max(m_a, m_b), w_x = e^(m_x - m),
//   l = w_a l_a + w_b l_b,  acc = w_a acc_a + w_b acc_b;  at the end out = acc / l.
// Prefill: one CTA per (row, head) walks its chunks in order, merging as it goes.
// Decode (head dims other than 64 and 128, more than 8 query heads per KV head, or a reserved
// context short enough that the grouped-query kernel would give each CTA one head; the others take
// attention_decode_gqa.cu): one CTA per (chunk, head) over the reserved context (the live
// length is read from device memory, so chunks past it exit at once), partials to scratch; the
// last live CTA of a head to finish (a per-head ticket counter) merges them, so a layer's
// attention is one launch; with one live chunk (up to 128 keys) its CTA writes the output itself.
// The chunk step both use (thread-to-data inside a chunk) is attention_chunk.cuh.
#include "cuda/attention.h"

#include <cmath>

#include "cuda/attention_chunk.cuh"
#include "cuda/attention_decode_gqa.h"
#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

using namespace attention_detail;

// Prefill. Thread-to-data: CTA b = r * n_head + h owns query row r, head h; see attend_chunk.
// (kThreads, 8): at 32 registers (what ptxas picks for full occupancy) the merge state spills.
template <int kHd>
__global__ void __launch_bounds__(kThreads, 8)
    attention_prefill_kernel(const float* q, const int32_t* pos, const float* __restrict__ k_cache,
                             const float* __restrict__ v_cache, float* out, int n_head, int group, int hd, float scale,
                             bool vec4) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  __shared__ ChunkSmem sm;
  const int64_t r = blockIdx.x / n_head;
  const int h = static_cast<int>(blockIdx.x - r * n_head);
  const int64_t q_cols = static_cast<int64_t>(n_head) * hd;
  const int64_t kv_cols = static_cast<int64_t>(n_head / group) * hd;
  const int64_t n_keys = pos[r] < 0 ? 0 : static_cast<int64_t>(pos[r]) + 1;  // causal: keys 0..pos
  for (int d = threadIdx.x; d < hd; d += kThreads) sm.q[d] = q[r * q_cols + h * hd + d];
  __syncthreads();

  const int64_t kv_off = static_cast<int64_t>(h / group) * hd;
  float m_run = -INFINITY, l_run = 0.f, acc_run[kDimsPerThread] = {};
  for (int64_t t0 = 0; t0 < n_keys; t0 += kChunk) {  // n_keys is the same in every thread
    float m_c, l_c, acc_c[kDimsPerThread];
    attend_chunk<kHd>(sm, k_cache + kv_off, v_cache + kv_off, kv_cols, hd, t0, n_keys, scale, vec4, m_c, l_c, acc_c);
    const float m_new = fmaxf(m_run, m_c);
    const float w_run = expf(m_run - m_new), w_c = expf(m_c - m_new);  // e^-inf = 0 on the first chunk
    l_run = l_run * w_run + l_c * w_c;
#pragma unroll
    for (int j = 0; j < kDimsPerThread; ++j) acc_run[j] = acc_run[j] * w_run + acc_c[j] * w_c;
    m_run = m_new;
  }
#pragma unroll
  for (int j = 0; j < kDimsPerThread; ++j) {
    const int d = threadIdx.x + j * kThreads;
    if (d < hd) out[r * q_cols + h * hd + d] = n_keys > 0 ? acc_run[j] / l_run : 0.f;
  }
}

// Decode. Thread-to-data: CTA (x = chunk, y = head h) owns keys [chunk*128, +128) of head h; see
// attend_chunk and decode_head_chunk (attention_chunk.cuh). Chunks at or past the live length
// return before touching anything (with no live key at all, chunk 0 writes the zero output).
template <int kHd>
__global__ void __launch_bounds__(kThreads)
    attention_decode_kernel(const float* q, const int32_t* pos, const float* __restrict__ k_cache,
                            const float* __restrict__ v_cache, float* scratch, unsigned int* tickets, float* out,
                            int group, int hd, int64_t kv_cols, int64_t max_ctx, int64_t n_chunks, float scale,
                            bool vec4) {
  // Before the wait (pdl.cuh rule 5): the position (not written by the kernel before this one,
  // the rope / KV store) and L2 prefetch hints for this chunk's K and V rows of earlier steps
  // (keys t < n_keys - 1; the step's own row is being written), so that the loads after the
  // wait find them in L2 instead of paying a DRAM round trip each.
  const int64_t n_keys = decode_keys(pos, max_ctx);
  const int64_t n_live = (n_keys + kChunk - 1) / kChunk;
  const int64_t chunk = blockIdx.x;
  const int64_t t0 = chunk * kChunk;
  const int h = blockIdx.y;
  if (t0 + threadIdx.x < n_keys - 1 && h % group == 0) {  // one CTA per KV head prefetches
    const int64_t row = (t0 + threadIdx.x) * kv_cols + static_cast<int64_t>(h / group) * hd;
    for (int b = 0; b < hd * 4; b += 128) {
      asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(k_cache + row) + b));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(v_cache + row) + b));
    }
  }
  pdl_wait();  // PDL: before reading q and the KV cache, and before the early return (pdl.cuh)
  pdl_launch_dependents();
  if (n_live == 0) {  // no keys: a zero output, as the CPU twin
    if (chunk == 0)
      for (int d = threadIdx.x; d < hd; d += kThreads) out[static_cast<int64_t>(h) * hd + d] = 0.f;
    return;
  }
  if (t0 >= n_keys) return;  // the same decision in every thread of the CTA
  decode_head_chunk<kHd>(q, k_cache, v_cache, scratch, tickets, out, h, group, hd, kv_cols, n_keys, n_chunks, chunk, scale,
                         vec4);
}

void check_heads(const char* kernel, int64_t n_head, int64_t n_head_kv, int64_t head_dim) {
  if (n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0)
    fail("CUDA kernel ", kernel, ": n_head (", n_head, ") must be a positive multiple of n_head_kv (", n_head_kv, ")");
  if (n_head > 65535) fail("CUDA kernel ", kernel, ": n_head ", n_head, " exceeds 65535");
  if (head_dim <= 0 || head_dim > kMaxHeadDim)
    fail("CUDA kernel ", kernel, ": head_dim must be in [1, ", kMaxHeadDim, "] (got ", head_dim, ")");
}

float softmax_scale(int64_t head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }  // as the CPU twin

}  // namespace

void attention_prefill(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                       int64_t rows, int64_t n_head, int64_t n_head_kv, int64_t head_dim, cudaStream_t s) {
  check_heads("attention_prefill", n_head, n_head_kv, head_dim);
  if (rows < 0) fail("CUDA kernel attention_prefill: negative rows ", rows);
  if (rows == 0) return;
  if (!q || !pos || !k_cache || !v_cache || !out) fail("CUDA kernel attention_prefill: null pointer");
  if (attention_prefill_uses_mma(head_dim)) {  // by shape: the tensor-core kernel (attention.h)
    attention_prefill_mma(q, pos, k_cache, v_cache, out, rows, n_head, n_head_kv, head_dim, s);
    return;
  }
  const bool vec4 = head_dim % 4 == 0 && aligned16(k_cache);
  const unsigned grid = grid_1d(rows * n_head, 1, "attention_prefill");  // one CTA per (row, head)
  // (64 and 128, the head dims with an unrolled dot, take the tensor cores above)
  launch_pdl("attention_prefill", attention_prefill_kernel<0>, grid, kThreads, 0, s, q, pos, k_cache, v_cache, out,
             static_cast<int>(n_head), static_cast<int>(n_head / n_head_kv), static_cast<int>(head_dim),
             softmax_scale(head_dim), vec4);
}

int64_t attention_decode_chunk() { return kChunk; }

int64_t attention_decode_tickets(int64_t n_head) { return n_head; }

int64_t attention_decode_scratch_floats(int64_t n_head, int64_t head_dim, int64_t max_ctx) {
  if (n_head <= 0 || head_dim <= 0 || max_ctx <= 0)
    fail("attention_decode_scratch_floats: bad shape n_head=", n_head, " head_dim=", head_dim, " max_ctx=", max_ctx);
  const int64_t n_chunks = (max_ctx + kChunk - 1) / kChunk;
  return n_head * n_chunks * (head_dim + 2);
}

void attention_decode(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                      int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t max_ctx, float* scratch,
                      unsigned int* tickets, cudaStream_t s) {
  check_heads("attention_decode", n_head, n_head_kv, head_dim);
  if (max_ctx <= 0) fail("CUDA kernel attention_decode: max_ctx must be > 0 (got ", max_ctx, ")");
  if (!q || !pos || !k_cache || !v_cache || !out || !scratch || !tickets)
    fail("CUDA kernel attention_decode: null pointer");
  // Head dims 64 and 128 with up to 8 query heads per KV head (Qwen2, Qwen3, Llama 3): one CTA per
  // KV head computes its whole group (attention_decode_gqa.cu). Other shapes: the kernel below.
  // A reserved context so short that no CTA of it would ever share heads: the per-head kernel below
  // (the same per-head step, the same bits, a smaller footprint).
  if (attention_decode_gqa_usable(q, k_cache, v_cache, out, scratch, n_head, n_head_kv, head_dim) &&
      attention_decode_gqa_shares_heads(n_head, n_head_kv, max_ctx))
    return attention_decode_gqa(q, pos, k_cache, v_cache, out, n_head, n_head_kv, head_dim, max_ctx, scratch, tickets,
                                softmax_scale(head_dim), s);
  const bool vec4 = head_dim % 4 == 0 && aligned16(k_cache);
  const int64_t n_chunks = (max_ctx + kChunk - 1) / kChunk;
  const dim3 grid(grid_1d(n_chunks, 1, "attention_decode"), static_cast<unsigned>(n_head));  // (chunk, head)
  const auto kernel = !vec4 ? attention_decode_kernel<0>
                      : head_dim == 64 ? attention_decode_kernel<64>
                      : head_dim == 128 ? attention_decode_kernel<128>
                                        : attention_decode_kernel<0>;
  launch_pdl("attention_decode", kernel, grid, kThreads, 0, s, q, pos, k_cache, v_cache, scratch, tickets, out,
             static_cast<int>(n_head / n_head_kv), static_cast<int>(head_dim), n_head_kv * head_dim, max_ctx, n_chunks,
             softmax_scale(head_dim), vec4);
}

}  // namespace minfer::cuda
