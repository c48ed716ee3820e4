// The per-head decode attention's chunk step, shared by attention.cu (its kernels) and
// attention_decode_gqa.cu (which takes it when a CTA has one head: short contexts). Internal to
// engine/cuda; the maths is attention.cu's header.
//
// Thread-to-data inside a chunk (128 threads, one CTA):
//   scores:  thread t owns key t0 + t: a float4 dot product of q (shared memory, broadcast) with
//            its K row; block max and sum via cub::BlockReduce (warp shuffles + one shared step:
//            CUB does this better than a hand-written reduction).
//   P.V:     the 128 threads form G = 128 / d groups of d threads (G = 1 when d > 128); thread
//            (g, dim) sums keys g, g + G, ... for its dim (threads of a group read one V row:
//            coalesced), then the G partials are added per dim through shared memory.
#pragma once
#include <cub/block/block_reduce.cuh>
#include <cuda/functional>

#include <cmath>
#include <cstdint>

namespace minfer::cuda::attention_detail {

// Host: whether p allows float4 access (the decode kernels' vector loads and stores).
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

constexpr int kThreads = 128;
constexpr int kChunk = kThreads;  // keys per chunk: one key per thread when scoring
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerThread = kMaxHeadDim / kThreads;  // output dims d = tid + j * kThreads

using BlockReduce = cub::BlockReduce<float, kThreads>;

struct ChunkSmem {
  alignas(16) float q[kMaxHeadDim];  // the query head, read by every thread (float4 broadcast)
  float p[kChunk];                    // e^(s_t - m_c) per key of the chunk (0 past the live keys)
  float part[kMaxHeadDim];            // P.V partials, [G][d] (G * d <= max(kThreads, d))
  float m, l;                         // the chunk's max and sum, broadcast from thread 0
  BlockReduce::TempStorage red;
};

// q . k over hd dims. kHd > 0: hd == kHd and float4-aligned, the loop unrolled so every load of
// the K row is in flight at once (decode is latency-bound: one round trip instead of one per
// iteration); kHd == 0: any hd. Both sum in the same order, so they give the same bits.
template <int kHd>
__device__ __forceinline__ float dot_qk(const float* q, const float* __restrict__ k, int hd, bool vec4) {
  if (kHd > 0 || vec4) {
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int d = 0; d < (kHd > 0 ? kHd : hd); d += 4) {
      const float4 qv = *reinterpret_cast<const float4*>(q + d);
      const float4 kv = *reinterpret_cast<const float4*>(k + d);
      a.x += qv.x * kv.x;
      a.y += qv.y * kv.y;
      a.z += qv.z * kv.z;
      a.w += qv.w * kv.w;
    }
    return (a.x + a.y) + (a.z + a.w);
  }
  float a = 0.f;
  for (int d = 0; d < hd; ++d) a += q[d] * k[d];
  return a;
}

// One chunk of keys [t0, min(t0 + kChunk, n_keys)) for the query in sm.q; t0 < n_keys. k, v point
// at the KV head's first column of cache row 0. Every thread gets the chunk's (m, l); acc[j] gets
// the unnormalised P.V for dim tid + j * kThreads (0 where that dim is >= hd).
// Barriers: A publishes m, B publishes p and l, C publishes the P.V partials. A caller may call
// again at once: each shared field's last reader in this call has passed the barrier that
// precedes its next writer (m: read A..B, written after the next max; p, l: read B..C, written
// after the next A; part: read after C, written after the next B; red: free after B).
template <int kHd>
__device__ __forceinline__ void attend_chunk(ChunkSmem& sm, const float* __restrict__ k, const float* __restrict__ v, int64_t kv_cols,
                             int hd, int64_t t0, int64_t n_keys, float scale, bool vec4, float& m_out, float& l_out,
                             float (&acc)[kDimsPerThread]) {
  const int tid = threadIdx.x;
  const int64_t t = t0 + tid;
  const bool live = t < n_keys;
  const float s = live ? scale * dot_qk<kHd>(sm.q, k + t * kv_cols, hd, vec4) : -INFINITY;

  const float m_blk = BlockReduce(sm.red).Reduce(s, ::cuda::maximum<float>{});  // thread 0 only
  if (tid == 0) sm.m = m_blk;
  __syncthreads();  // A
  const float m = sm.m;
  const float p = live ? expf(s - m) : 0.0f;
  sm.p[tid] = p;
  const float l_blk = BlockReduce(sm.red).Sum(p);
  if (tid == 0) sm.l = l_blk;
  __syncthreads();  // B
  const float l = sm.l;

  const int n = static_cast<int>(n_keys - t0 < kChunk ? n_keys - t0 : kChunk);
  const int groups = hd <= kThreads ? kThreads / hd : 1;
  if (hd <= kThreads) {
    const int g = tid / hd, d = tid - g * hd;
    if (g < groups) {
      float a = 0.f;
#pragma unroll 8  // the V loads of 8 keys in flight before their (ordered) adds
      for (int j = g; j < n; j += groups) a += sm.p[j] * v[(t0 + j) * kv_cols + d];
      sm.part[g * hd + d] = a;
    }
  } else {
    for (int d = tid; d < hd; d += kThreads) {
      float a = 0.f;
      for (int j = 0; j < n; ++j) a += sm.p[j] * v[(t0 + j) * kv_cols + d];
      sm.part[d] = a;
    }
  }
  __syncthreads();  // C
#pragma unroll
  for (int j = 0; j < kDimsPerThread; ++j) {
    const int d = tid + j * kThreads;
    float a = 0.f;
    if (d < hd)
      for (int g = 0; g < groups; ++g) a += sm.part[g * hd + d];
    acc[j] = a;
  }
  m_out = m;
  l_out = l;
}

// The live KV length of a decode step, read from device memory; clamped to the reserved context.
__device__ __forceinline__ int64_t decode_keys(const int32_t* pos, int64_t max_ctx) {
  const int64_t n = static_cast<int64_t>(pos[0]) + 1;
  return n < 0 ? 0 : (n > max_ctx ? max_ctx : n);
}

// Scratch layout: per (head, chunk) a slot of hd + 2 floats: m, l, acc[0..hd).
__device__ __forceinline__ int64_t slot_offset(int h, int64_t chunk, int64_t n_chunks, int hd) {
  return (static_cast<int64_t>(h) * n_chunks + chunk) * (hd + 2);
}

// The merge of head h's live partials into out (thread t: dims t, t + 128, ...). Partials written
// by other CTAs are read through L2 (__ldcg): L1 is not coherent across SMs.
__device__ __forceinline__ void combine_head(const float* scratch, float* out, int h, int hd, int64_t n_live, int64_t n_chunks) {
  const float* slots = scratch + slot_offset(h, 0, n_chunks, hd);
  float m = -INFINITY;
  for (int64_t c = 0; c < n_live; ++c) m = fmaxf(m, __ldcg(slots + c * (hd + 2)));
  for (int d = threadIdx.x; d < hd; d += kThreads) {
    float l = 0.f, acc = 0.f;
    for (int64_t c = 0; c < n_live; ++c) {
      const float* slot = slots + c * (hd + 2);
      const float w = expf(__ldcg(slot) - m);
      l += w * __ldcg(slot + 1);
      acc += w * __ldcg(slot + 2 + d);
    }
    out[static_cast<int64_t>(h) * hd + d] = acc / l;
  }
}

// The per-head decode of one live chunk (t0 < n_keys) of head h, after the PDL wait: the chunk's
// partial into scratch, then a ticket of the head; the one that takes the last merges the head
// (combine_head) and resets the counter for the next launch. The merge reads the partials in
// chunk order whoever is last: the result does not depend on the order the CTAs finish in. With
// one live chunk the CTA writes the output itself. Every thread of the CTA calls it.
template <int kHd>
__device__ __forceinline__ void decode_head_chunk(const float* q, const float* __restrict__ k_cache,
                                                  const float* __restrict__ v_cache, float* scratch,
                                                  unsigned int* tickets, float* out, int h, int group, int hd,
                                                  int64_t kv_cols, int64_t n_keys, int64_t n_chunks, int64_t chunk,
                                                  float scale, bool vec4) {
  const int64_t n_live = (n_keys + kChunk - 1) / kChunk;
  const int64_t t0 = chunk * kChunk;
  __shared__ ChunkSmem sm;
  __shared__ bool last;
  for (int d = threadIdx.x; d < hd; d += kThreads) sm.q[d] = q[static_cast<int64_t>(h) * hd + d];
  __syncthreads();
  const int64_t kv_off = static_cast<int64_t>(h / group) * hd;
  float m_c, l_c, acc_c[kDimsPerThread];
  attend_chunk<kHd>(sm, k_cache + kv_off, v_cache + kv_off, kv_cols, hd, t0, n_keys, scale, vec4, m_c, l_c, acc_c);
  if (n_live == 1) {  // the only live chunk: no merge. combine_head of one partial gives these bits
#pragma unroll      // (weight e^0 = 1, l = 0 + l_c), without the scratch round trip and the ticket.
    for (int j = 0; j < kDimsPerThread; ++j) {
      const int d = threadIdx.x + j * kThreads;
      if (d < hd) out[static_cast<int64_t>(h) * hd + d] = acc_c[j] / l_c;
    }
    return;
  }
  float* slot = scratch + slot_offset(h, chunk, n_chunks, hd);
#pragma unroll
  for (int j = 0; j < kDimsPerThread; ++j) {
    const int d = threadIdx.x + j * kThreads;
    if (d < hd) slot[2 + d] = acc_c[j];
  }
  if (threadIdx.x == 0) {
    slot[0] = m_c;
    slot[1] = l_c;
  }
  __threadfence();  // this thread's part of the partial is visible device-wide before the ticket
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(&tickets[h], 1u) == static_cast<unsigned int>(n_live - 1);
    if (last) __threadfence();  // and every other CTA's partial is visible to this one
  }
  __syncthreads();
  if (!last) return;
  combine_head(scratch, out, h, hd, n_live, n_chunks);
  if (threadIdx.x == 0) tickets[h] = 0;  // every live CTA of this head has taken its ticket
}

}  // namespace minfer::cuda::attention_detail
