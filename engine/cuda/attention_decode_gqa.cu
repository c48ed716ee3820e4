// Decode attention, one CTA per (chunk of 128 keys, KV head, slice of the group's query heads)
// (attention_decode_gqa.h). The maths is attention.cu's: per chunk and head
//   m_c = max_t s_t,  l_c = sum_t e^(s_t - m_c),  acc_c = sum_t e^(s_t - m_c) v_t,
// partials merged exactly, out = acc / l; the scores in the same order as attention.cu's dot_qk.
//
// Why: the per-head kernel reads each K and V row of a chunk once per query head (7 times for
// Qwen2.5's 14/2 and 28/4 heads), and its P.V runs 8 rounds of dependent V loads per thread and a
// merge of 3 serial loads per chunk: at 4096 keys the 0.5b decode spent ~14 us per layer there
// (985 tok/s against 1,483 at 576 keys) for 4 MB of cache. Here a K row is read once into
// registers and scored against every head; P.V has 16 V loads in flight per thread; the merge
// loads 16 chunks' partials at a time.
//
// How many CTAs share a group's heads (the split) follows the live length, read on the device:
// each CTA takes ceil(group / split) heads, split = ceil(SMs / (live chunks x KV heads)) capped
// at the group, so a short context still spreads over the GPU (7B at 576 keys: 5 x 4 x 7 CTAs of
// one head, as the per-head kernel) and a long one reads each K and V row once or twice (7B at
// 4096 keys: 33 x 4 CTAs of all 7 heads). A CTA of one head runs the per-head kernel's chunk step
// (attention_chunk.cuh: its scratch layout and merge); several heads take the code below.
// Measured on the H200 (Q4_0, tg128, tok/s; per-head kernel -> this one): 0.5b after 512 tokens
// 1,482 -> 1,483, after 4096 985 -> 1,155; 7B after 512 463 -> 457, after 4096 334 -> 370. The
// 7B's 1.5 % at short contexts, on the per-head path too: this kernel's footprint (242 registers,
// 27.5 KB of shared memory against 40 and 2.6 KB) is the suspect, so a reserved context short
// enough that no CTA ever shares heads launches the per-head kernel (attention_decode_gqa_shares_heads).
//
// Thread-to-data (128 threads):
//   scores:  thread t owns key t0 + t: its K row in registers (hd / 4 float4 loads at once), one
//            dot per head against q in shared memory; per-head max and sum: warp shuffles, then
//            the 4 warps' values added in warp order.
//   P.V:     thread t owns dims [4 (t % Q), +4) (Q = hd / 4 float4 columns) for the keys
//            t / Q + (128 / Q) i: a warp reads whole V rows (coalesced); the 128 / Q key groups'
//            sums are added in group order through shared memory.
//   merge:   (the last CTA of a slice to finish, over the slice's heads: a ticket counter per
//            slice) thread t owns float4 column (g, q4) of the slice's outputs and walks the
//            live chunks in order.
// Scratch: [n_head][n_chunks][hd] accumulators, then [n_head][n_chunks] (m, l) pairs: the size
// attention_decode_scratch_floats gives (hd + 2 per slot), laid out for float4 / float2 loads (a
// launch whose CTAs have one head each uses attention_chunk.cuh's layout and per-head merge).
#include "cuda/attention_decode_gqa.h"

#include <cmath>

#include "core/error.h"
#include "cuda/attention_chunk.cuh"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kChunk = 128;  // keys per CTA: attention_decode_chunk() (the static_assert below)
constexpr int kBatch = 16;   // V rows (P.V) and chunks (merge) loaded per thread at once
static_assert(kThreads == attention_detail::kThreads && kChunk == attention_detail::kChunk,
              "one head per CTA runs attention_chunk.cuh's step in the same CTA shape");

template <int kHd, int kMaxG>
struct Smem {
  static constexpr int kQuads = kHd / 4;                 // float4 columns of a head
  static constexpr int kKeyGroups = kThreads / kQuads;   // P.V: threads per column
  alignas(16) float q[kMaxG][kHd];
  float p[kMaxG][kChunk];  // e^(s_t - m) per head and key (0 for keys past the live length)
  float red_max[kWarps][kMaxG], red_sum[kWarps][kMaxG];
  float m[kMaxG], l[kMaxG];
  alignas(16) float part[kKeyGroups][kMaxG][kHd];  // P.V sums per key group
  bool last;
};

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ void fma4(float4& a, float w, const float4& v) {
  a.x += w * v.x;
  a.y += w * v.y;
  a.z += w * v.z;
  a.w += w * v.w;
}

// The heads a CTA takes (see the header): the group split over ceil(SMs / (live chunks x KV heads))
// CTAs, at most one per head. Host and device: attention_decode_gqa_shares_heads asks it too.
__host__ __device__ __forceinline__ int heads_per_cta(int64_t n_live, int64_t n_head_kv, int group, int n_sms) {
  const int64_t work = n_live * n_head_kv;
  const int64_t want = work == 0 ? 1 : (n_sms + work - 1) / work;
  const int split = want < 1 ? 1 : (want > group ? group : static_cast<int>(want));
  return (group + split - 1) / split;
}

template <int kHd, int kMaxG>
__global__ void __launch_bounds__(kThreads)
    attention_decode_gqa_kernel(const float* q, const int32_t* pos, const float* __restrict__ k_cache,
                                const float* __restrict__ v_cache, float* scratch, unsigned int* tickets, float* out,
                                int group, int64_t kv_cols, int64_t max_ctx, int64_t n_chunks, float scale,
                                int n_sms) {
  using S = Smem<kHd, kMaxG>;
  constexpr int kQuads = S::kQuads, kKeyGroups = S::kKeyGroups, kKeysPerThread = kChunk / kKeyGroups;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t n_keys = attention_detail::decode_keys(pos, max_ctx);
  const int64_t n_live = (n_keys + kChunk - 1) / kChunk;
  const int64_t chunk = blockIdx.x, t0 = chunk * kChunk;
  const int kvh = blockIdx.y, hg = kvh * group;  // the group's first head
  // This CTA's heads: [h0, h0 + ng) of the group's, one slice of `n_split` (see the header).
  const int per_cta = heads_per_cta(n_live, gridDim.y, group, n_sms);
  const int n_split = (group + per_cta - 1) / per_cta;
  const int z = blockIdx.z;
  const int h0 = hg + z * per_cta, ng = min(per_cta, group - z * per_cta);
  const int64_t kv_off = static_cast<int64_t>(kvh) * kHd;
  // Before the wait (pdl.cuh rule 5, as attention.cu): L2 prefetch hints for this chunk's K and V
  // rows of earlier steps; the step's own row (written by the kernel before) is read after it.
  if (t0 + tid < n_keys - 1 && z == 0) {  // one slice prefetches
    const int64_t row = (t0 + tid) * kv_cols + kv_off;
#pragma unroll
    for (int b = 0; b < kHd * 4; b += 128) {
      asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(k_cache + row) + b));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(v_cache + row) + b));
    }
  }
  pdl_wait();  // PDL: before reading q and the KV cache, and before the early returns (pdl.cuh)
  pdl_launch_dependents();
  float4* out4 = reinterpret_cast<float4*>(out);
  if (n_live == 0) {  // no keys: a zero output, as the CPU twin
    if (chunk == 0 && z == 0)
      for (int o = tid; o < group * kQuads; o += kThreads) out4[hg * kQuads + o] = make_float4(0.f, 0.f, 0.f, 0.f);
    return;
  }
  if (t0 >= n_keys || z >= n_split) return;  // the same decision in every thread of the CTA
  if (per_cta == 1) {  // one head per CTA (short contexts): the per-head kernel's chunk step
    attention_detail::decode_head_chunk<kHd>(q, k_cache, v_cache, scratch, tickets, out, h0, group, kHd, kv_cols, n_keys,
                                             n_chunks, chunk, scale, true);
    return;
  }

  __shared__ S sm;
  const float4* q4 = reinterpret_cast<const float4*>(q) + static_cast<int64_t>(h0) * kQuads;
  for (int o = tid; o < ng * kQuads; o += kThreads) reinterpret_cast<float4*>(sm.q)[o] = q4[o];
  __syncthreads();

  // Scores of key t0 + tid against every head of the group.
  const bool live = t0 + tid < n_keys;
  float s[kMaxG];
  {
    float4 kr[kQuads];
    const float4* k4 = reinterpret_cast<const float4*>(k_cache + (t0 + tid) * kv_cols + kv_off);
#pragma unroll
    for (int i = 0; i < kQuads; ++i) kr[i] = live ? k4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int g = 0; g < kMaxG; ++g) {
      float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
      if (g < ng) {
        const float4* qg = reinterpret_cast<const float4*>(sm.q[g]);
#pragma unroll
        for (int i = 0; i < kQuads; ++i) {
          const float4 qv = qg[i];
          a.x += qv.x * kr[i].x;
          a.y += qv.y * kr[i].y;
          a.z += qv.z * kr[i].z;
          a.w += qv.w * kr[i].w;
        }
      }
      s[g] = live && g < ng ? scale * ((a.x + a.y) + (a.z + a.w)) : -INFINITY;
    }
  }
#pragma unroll
  for (int g = 0; g < kMaxG; ++g) {
    const float v = warp_max(s[g]);
    if (lane == 0) sm.red_max[warp][g] = v;
  }
  __syncthreads();  // A: the warps' maxima
  float m[kMaxG];
#pragma unroll
  for (int g = 0; g < kMaxG; ++g) {
    m[g] = sm.red_max[0][g];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) m[g] = fmaxf(m[g], sm.red_max[w][g]);
    const float p = live && g < ng ? expf(s[g] - m[g]) : 0.0f;
    sm.p[g][tid] = p;
    const float v = warp_sum(p);
    if (lane == 0) sm.red_sum[warp][g] = v;
  }
  __syncthreads();  // B: p and the warps' sums
  if (tid == 0) {
#pragma unroll
    for (int g = 0; g < kMaxG; ++g) {
      float l = sm.red_sum[0][g];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) l += sm.red_sum[w][g];
      sm.m[g] = m[g];
      sm.l[g] = l;
    }
  }

  // P.V: column dq of the heads, keys kg, kg + kKeyGroups, ... of the chunk.
  const int dq = tid % kQuads, kg = tid / kQuads;
  const int n = static_cast<int>(n_keys - t0 < kChunk ? n_keys - t0 : kChunk);
  const float4* v4 = reinterpret_cast<const float4*>(v_cache + t0 * kv_cols + kv_off) + dq;
  const int64_t row4 = kv_cols / 4;
  float4 acc[kMaxG];
#pragma unroll
  for (int g = 0; g < kMaxG; ++g) acc[g] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int b = 0; b < kKeysPerThread; b += kBatch) {
    float4 vv[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int j = kg + kKeyGroups * (b + i);
      vv[i] = j < n ? v4[j * row4] : make_float4(0.f, 0.f, 0.f, 0.f);  // rows past the live length: never read
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int j = kg + kKeyGroups * (b + i);
#pragma unroll
      for (int g = 0; g < kMaxG; ++g)
        if (g < ng) fma4(acc[g], sm.p[g][j], vv[i]);
    }
  }
#pragma unroll
  for (int g = 0; g < kMaxG; ++g)
    if (g < ng) reinterpret_cast<float4*>(sm.part[kg][g])[dq] = acc[g];
  __syncthreads();  // C: the key groups' sums, m and l

  const int64_t n_head = static_cast<int64_t>(group) * gridDim.y;
  float* acc_slots = scratch;                             // [n_head][n_chunks][kHd]
  float2* ml_slots = reinterpret_cast<float2*>(scratch + n_head * n_chunks * kHd);  // [n_head][n_chunks]
  for (int o = tid; o < ng * kQuads; o += kThreads) {
    const int g = o / kQuads, c4 = o % kQuads;
    float4 a = reinterpret_cast<const float4*>(sm.part[0][g])[c4];
#pragma unroll
    for (int k = 1; k < kKeyGroups; ++k) {
      const float4 b = reinterpret_cast<const float4*>(sm.part[k][g])[c4];
      a.x += b.x;
      a.y += b.y;
      a.z += b.z;
      a.w += b.w;
    }
    const int64_t h = h0 + g;
    if (n_live == 1) {  // the only live chunk: the merge of one partial gives these bits (weight 1)
      const float l = sm.l[g];
      out4[h * kQuads + c4] = make_float4(a.x / l, a.y / l, a.z / l, a.w / l);
    } else {
      reinterpret_cast<float4*>(acc_slots + (h * n_chunks + chunk) * kHd)[c4] = a;
    }
  }
  if (n_live == 1) return;
  if (tid < ng) ml_slots[(h0 + tid) * n_chunks + chunk] = make_float2(sm.m[tid], sm.l[tid]);
  __threadfence();  // this thread's part of the partial is visible device-wide before the ticket
  __syncthreads();
  if (tid == 0) {
    sm.last = atomicAdd(&tickets[hg + z], 1u) == static_cast<unsigned int>(n_live - 1);
    if (sm.last) __threadfence();  // and every other CTA's partial is visible to this one
  }
  __syncthreads();
  if (!sm.last) return;

  // The merge, in chunk order whoever is last. Partials of other CTAs are read through L2
  // (__ldcg): L1 is not coherent across SMs. First the maximum per head.
  float mx[kMaxG];
#pragma unroll
  for (int g = 0; g < kMaxG; ++g) mx[g] = -INFINITY;
  for (int64_t c = tid; c < n_live; c += kThreads)
#pragma unroll
    for (int g = 0; g < kMaxG; ++g)
      if (g < ng) mx[g] = fmaxf(mx[g], __ldcg(ml_slots + (h0 + g) * n_chunks + c).x);
#pragma unroll
  for (int g = 0; g < kMaxG; ++g) {
    const float v = warp_max(mx[g]);
    if (lane == 0) sm.red_max[warp][g] = v;
  }
  __syncthreads();
  for (int o = tid; o < ng * kQuads; o += kThreads) {
    const int g = o / kQuads, c4 = o % kQuads;
    const int64_t h = h0 + g;
    float mh = sm.red_max[0][g];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) mh = fmaxf(mh, sm.red_max[w][g]);
    const float2* mlh = ml_slots + h * n_chunks;
    const float4* ah = reinterpret_cast<const float4*>(acc_slots + h * n_chunks * kHd) + c4;
    float l = 0.f;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int64_t c0 = 0; c0 < n_live; c0 += kBatch) {
      float2 mlv[kBatch];
      float4 av[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (c0 + i < n_live) {
          mlv[i] = __ldcg(mlh + c0 + i);
          av[i] = __ldcg(ah + (c0 + i) * kQuads);
        }
      }
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (c0 + i < n_live) {
          const float w = expf(mlv[i].x - mh);
          l += w * mlv[i].y;
          fma4(a, w, av[i]);
        }
      }
    }
    out4[h * kQuads + c4] = make_float4(a.x / l, a.y / l, a.z / l, a.w / l);
  }
  if (tid == 0) tickets[hg + z] = 0;  // every live CTA of this slice has taken its ticket
}

template <int kHd, int kMaxG>
void launch(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
            int64_t n_head_kv, int group, int64_t max_ctx, float* scratch, unsigned int* tickets, float scale,
            cudaStream_t s) {
  const int64_t n_chunks = (max_ctx + kChunk - 1) / kChunk;
  // (chunk, KV head, slice): as many slices as heads; the kernel uses those the live length needs.
  const dim3 grid(grid_1d(n_chunks, 1, "attention_decode_gqa"), static_cast<unsigned>(n_head_kv),
                  static_cast<unsigned>(group));
  launch_pdl("attention_decode_gqa", attention_decode_gqa_kernel<kHd, kMaxG>, grid, kThreads, 0, s, q, pos, k_cache,
             v_cache, scratch, tickets, out, group, n_head_kv * kHd, max_ctx, n_chunks, scale, sm_count());
}

template <int kHd>
void launch_hd(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
               int64_t n_head_kv, int group, int64_t max_ctx, float* scratch, unsigned int* tickets, float scale,
               cudaStream_t s) {
  if (group <= 1) return launch<kHd, 1>(q, pos, k_cache, v_cache, out, n_head_kv, group, max_ctx, scratch, tickets, scale, s);
  if (group <= 2) return launch<kHd, 2>(q, pos, k_cache, v_cache, out, n_head_kv, group, max_ctx, scratch, tickets, scale, s);
  if (group <= 4) return launch<kHd, 4>(q, pos, k_cache, v_cache, out, n_head_kv, group, max_ctx, scratch, tickets, scale, s);
  launch<kHd, 8>(q, pos, k_cache, v_cache, out, n_head_kv, group, max_ctx, scratch, tickets, scale, s);
}

}  // namespace

bool attention_decode_gqa_usable(const float* q, const float* k_cache, const float* v_cache, const float* out,
                                 const float* scratch, int64_t n_head, int64_t n_head_kv, int64_t head_dim) {
  static_assert(kGqaMaxGroup == 8, "launch_hd's largest bucket");
  return (head_dim == 64 || head_dim == 128) && n_head_kv > 0 && n_head % n_head_kv == 0 &&
         n_head / n_head_kv <= kGqaMaxGroup && attention_detail::aligned16(q) &&
         attention_detail::aligned16(k_cache) && attention_detail::aligned16(v_cache) &&
         attention_detail::aligned16(out) && attention_detail::aligned16(scratch);
}

bool attention_decode_gqa_shares_heads(int64_t n_head, int64_t n_head_kv, int64_t max_ctx) {
  // The longest context has the most live chunks, so the most heads per CTA.
  const int64_t n_chunks = (max_ctx + kChunk - 1) / kChunk;
  return heads_per_cta(n_chunks, n_head_kv, static_cast<int>(n_head / n_head_kv), sm_count()) > 1;
}

void attention_decode_gqa(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                          int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t max_ctx, float* scratch,
                          unsigned int* tickets, float scale, cudaStream_t s) {
  if (!attention_decode_gqa_usable(q, k_cache, v_cache, out, scratch, n_head, n_head_kv, head_dim))
    fail("attention_decode_gqa: unsupported shape or alignment (", n_head, "/", n_head_kv, " heads x ", head_dim, ")");
  const int group = static_cast<int>(n_head / n_head_kv);
  if (head_dim == 64) launch_hd<64>(q, pos, k_cache, v_cache, out, n_head_kv, group, max_ctx, scratch, tickets, scale, s);
  else launch_hd<128>(q, pos, k_cache, v_cache, out, n_head_kv, group, max_ctx, scratch, tickets, scale, s);
}

}  // namespace minfer::cuda
