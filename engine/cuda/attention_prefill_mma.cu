// Causal GQA prefill attention on tensor cores (flash-attention-2 style), head_dim 64 and 128.
// Same contract as attention_prefill (attention.h), which dispatches here for these head dims.
//
// Math. For a query row r (position p = pos[r]) and q head h over the keys t = 0..p of KV head
// h / group:  out = sum_t softmax_t(s) v_t,  s_t = (q . k_t) / sqrt(d).  Keys are walked in tiles
// of 64 with the online softmax, in base 2 (log2(e) folded into the scale):
//   x_t = s_t log2(e);  m' = max(m, max_t x_t);  alpha = 2^(m - m');  p_t = 2^(x_t - m')
//   l' = alpha l + sum_t p_t;  acc' = alpha acc + sum_t p_t v_t;  at the end out = acc / l.
// A row that has seen no live key yet keeps m = -inf; its exponents are then taken against 0
// instead of m' (= -inf), so alpha = p = 0 and no NaN appears (-inf - -inf). A row without any key
// (pos < 0, or a padding row of the last tile) ends with l = 0 and gets a zero output.
//
// Precision. Q, K, V and P are rounded to f16 for the tensor cores (the KV cache stays f32; the
// scores, the softmax and the accumulators are f32). Against the f32 CPU twin the output differs
// by ~1e-3 relative (2e-4 .. 8e-4 measured; the tests allow a relative L2 error of 3e-3, see
// test_cuda_attention.cpp).
// |q|, |k|, |v| must stay below 65504 (f16 overflow); real Qwen activations stay far below.
//
// Thread-to-data. One CTA of 4 warps per (tile of 64 query rows, q head): warp w owns rows
// 16w..16w+15 of the tile. Lane = 4g + t (g = lane / 4, t = lane % 4, the PTX "groupID" and
// "threadID_in_group"). Per 64-key tile:
//   load:  all 128 threads convert the f32 K rows to f16 into ks[key][dim] and the V rows into
//          vt[dim][key] (transposed, so a B fragment of P.V is one 32-bit load as for K).
//   S:     S = Q K^T, 16 x 64 per warp: 8 m16n8k16 tiles of 8 keys, head_dim / 16 steps each. Q
//          stays in registers (A fragments) for the whole CTA; the B fragments come from ks.
//   soft:  the accumulator of S holds rows g and g + 8, keys 2t, 2t + 1 of each 8-key tile: a
//          row's 64 scores sit in the 4 lanes of a quad, reduced with two xor shuffles.
//   P.V:   the S accumulators of two neighbouring 8-key tiles are exactly the A fragment of a
//          16-key step of P (FA2's register reuse), so P never goes through shared memory.
//   out:   O accumulators (rows g, g + 8; dims 2t, 2t + 1 of each 8-dim tile) / l, as float2.
// Shared rows are padded by 8 halves: a fragment load reads words row * (stride / 2) + t with
// stride / 2 = 4 (mod 32) banks, so the 8 rows x 4 lanes of a warp hit 32 distinct banks.
// The grid is ordered longest-prefix first (the last row tile of a prompt attends the most keys).
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/attention.h"
#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows per CTA (16 per warp: the m of m16n8k16)
constexpr int kKeys = 64;           // keys per tile
constexpr int kPad = 8;             // halves of padding per shared row (see the header)
constexpr float kLog2e = 1.4426950408889634f;

// D += A B for one m16n8k16 tile: A 16x16 f16 (row), B 16x8 f16 (col), D 16x8 f32. Fragments as
// given in the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type"), with
// g = lane / 4, t = lane % 4; each register holds two f16, the lower index in the low half:
//   a[0] = A[g][2t, 2t+1]    a[1] = A[g+8][2t, 2t+1]    a[2] = A[g][2t+8, 2t+9]    a[3] = A[g+8][2t+8, 2t+9]
//   b0   = B[2t, 2t+1][g]    b1   = B[2t+8, 2t+9][g]
//   d[0], d[1] = D[g][2t, 2t+1]                          d[2], d[3] = D[g+8][2t, 2t+1]
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as one f16x2 register: lo in the low half (the lower matrix index).
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &h, sizeof(u));
  return u;
}

// Two neighbouring f16 of a shared row (p even) as one register: p[0] in the low half.
__device__ __forceinline__ uint32_t lds_half2(const __half* p) { return *reinterpret_cast<const uint32_t*>(p); }

template <int D>
struct Smem {
  alignas(16) __half ks[kKeys][D + kPad];  // K tile, key-major
  alignas(16) __half vt[D][kKeys + kPad];  // V tile, transposed: dim-major
  int pos[kRows];                          // the tile's positions; -1 past `rows`
};

// Keys [k0, k0 + kKeys) of one KV head into shared memory as f16; keys >= n_keys become zeros
// (they may lie past the cache, and 0 * garbage could be NaN in P.V). k, v: the KV head's column
// 0 of cache row 0; kv_cols: the cache row stride in floats. Each thread's loads are fixed offsets
// from one or two row pointers (few registers while a whole tile is in flight).
template <int D>
__device__ __forceinline__ void load_kv_tile(Smem<D>& sm, const float* __restrict__ k, const float* __restrict__ v,
                                             int64_t kv_cols, int64_t k0, int64_t n_keys) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // K: thread -> (key, 4 dims) with the dims fastest: float4 loads along a row (coalesced), one
  // 8-byte store per float4; each pass covers kThreads / (D / 4) keys.
  constexpr int kVec = D / 4, kKeysPerPass = kThreads / kVec;
  static_assert(kThreads % kVec == 0 && kKeys % kKeysPerPass == 0, "whole passes over the K tile");
  {
    const int key0 = tid / kVec, c = (tid % kVec) * 4;
    const float* src = k + (k0 + key0) * kv_cols + c;
#pragma unroll
    for (int it = 0; it < kKeys / kKeysPerPass; ++it) {
      const int key = key0 + it * kKeysPerPass;
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (k0 + key < n_keys) x = __ldg(reinterpret_cast<const float4*>(src + it * kKeysPerPass * kv_cols));
      *reinterpret_cast<uint2*>(&sm.ks[key][c]) = make_uint2(pack_half2(x.x, x.y), pack_half2(x.z, x.w));
    }
  }
  // V, transposed: a thread takes keys 2j, 2j + 1 of dim d and stores them as one f16x2 word of
  // vt[d]. A warp's lanes are 8 dims x 4 key pairs: each load instruction reads 4 rows x 32
  // contiguous bytes, and the stores hit banks (4 d + j) % 32 (the row stride is 36 words), all
  // distinct. Warp w takes the key pairs 4w..4w+3 and 16+4w..16+4w+3, every dim.
  {
    const int dl = lane % 8, j0 = 4 * warp + lane / 8;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int j = j0 + 16 * half;
      const int64_t t = k0 + 2 * j;
      const float* src = v + t * kv_cols + dl;
      const bool live0 = t < n_keys, live1 = t + 1 < n_keys;
#pragma unroll
      for (int db = 0; db < D / 8; ++db) {
        const float v0 = live0 ? __ldg(src + 8 * db) : 0.f;
        const float v1 = live1 ? __ldg(src + kv_cols + 8 * db) : 0.f;
        *reinterpret_cast<uint32_t*>(&sm.vt[8 * db + dl][2 * j]) = pack_half2(v0, v1);
      }
    }
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    attention_prefill_mma_kernel(const float* q, const int32_t* pos, const float* __restrict__ k_cache,
                                 const float* __restrict__ v_cache, float* out, int64_t rows, int n_head, int group,
                                 int64_t n_tiles, float scale_log2) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  __shared__ Smem<D> sm;
  constexpr int kSteps = D / 16;      // k-steps of S = Q K^T (and A fragments of Q)
  constexpr int kKeyTiles = kKeys / 8;  // 8-key n-tiles of S
  constexpr int kDimTiles = D / 8;      // 8-dim n-tiles of O

  const int h = static_cast<int>(blockIdx.x % n_head);
  const int64_t row0 = (n_tiles - 1 - static_cast<int64_t>(blockIdx.x / n_head)) * kRows;  // longest first
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int64_t q_cols = static_cast<int64_t>(n_head) * D;
  const int64_t kv_cols = static_cast<int64_t>(n_head / group) * D;
  const float* k_head = k_cache + static_cast<int64_t>(h / group) * D;
  const float* v_head = v_cache + static_cast<int64_t>(h / group) * D;

  if (tid < kRows) sm.pos[tid] = row0 + tid < rows ? pos[row0 + tid] : -1;
  __syncthreads();
  int tile_max = -1, warp_max = -1;  // the keys this CTA / this warp needs: [0, max pos]
  for (int i = 0; i < kRows; ++i) tile_max = max(tile_max, sm.pos[i]);
  for (int i = 16 * warp; i < 16 * warp + 16; ++i) warp_max = max(warp_max, sm.pos[i]);
  const int64_t r_lo = row0 + 16 * warp + g, r_hi = r_lo + 8;  // this lane's rows
  const int pos_lo = sm.pos[16 * warp + g], pos_hi = sm.pos[16 * warp + g + 8];

  // Q as A fragments (rows r_lo, r_hi; zeros past `rows`), kept for the whole key walk.
  uint32_t qa[kSteps][4];
  {
    const float* q_lo = q + r_lo * q_cols + h * D + 2 * t;
    const float* q_hi = q + r_hi * q_cols + h * D + 2 * t;
    const float2 zero = make_float2(0.f, 0.f);
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      const float2 a0 = r_lo < rows ? *reinterpret_cast<const float2*>(q_lo + 16 * kk) : zero;
      const float2 a1 = r_hi < rows ? *reinterpret_cast<const float2*>(q_hi + 16 * kk) : zero;
      const float2 a2 = r_lo < rows ? *reinterpret_cast<const float2*>(q_lo + 16 * kk + 8) : zero;
      const float2 a3 = r_hi < rows ? *reinterpret_cast<const float2*>(q_hi + 16 * kk + 8) : zero;
      qa[kk][0] = pack_half2(a0.x, a0.y);
      qa[kk][1] = pack_half2(a1.x, a1.y);
      qa[kk][2] = pack_half2(a2.x, a2.y);
      qa[kk][3] = pack_half2(a3.x, a3.y);
    }
  }

  float o[kDimTiles][4] = {};                         // unnormalised output, rows g and g + 8
  float m_lo = -INFINITY, m_hi = -INFINITY;           // running max (base-2 units), per row
  float l_lo = 0.f, l_hi = 0.f;                       // this lane's part of the running sum
  const int64_t n_keys = static_cast<int64_t>(tile_max) + 1;
  for (int64_t k0 = 0; k0 < n_keys; k0 += kKeys) {
    load_kv_tile<D>(sm, k_head, v_head, kv_cols, k0, n_keys);
    __syncthreads();
    if (k0 <= warp_max) {  // warp-uniform: a warp whose rows all end before this tile skips it
      float s[kKeyTiles][4] = {};
#pragma unroll
      for (int kk = 0; kk < kSteps; ++kk)
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt) {  // B = K^T: B[dim][key] = ks[key][dim]
          const __half* kp = &sm.ks[8 * nt + g][16 * kk + 2 * t];
          mma_16816(s[nt], qa[kk], lds_half2(kp), lds_half2(kp + 8));
        }

      // Scale, causal mask (key k0 + 8 nt + 2t + (i & 1) against the row's position), tile max.
      const int64_t lim_lo = pos_lo - k0, lim_hi = pos_hi - k0;  // last live key, tile-relative
      float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int key = 8 * nt + 2 * t + (i & 1);
          const bool live = key <= (i < 2 ? lim_lo : lim_hi);
          s[nt][i] = live ? s[nt][i] * scale_log2 : -INFINITY;
          if (i < 2) mx_lo = fmaxf(mx_lo, s[nt][i]);
          else mx_hi = fmaxf(mx_hi, s[nt][i]);
        }
#pragma unroll
      for (int x = 1; x <= 2; x *= 2) {  // over the quad: the 4 lanes of a row
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, x));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, x));
      }
      const float mnew_lo = fmaxf(m_lo, mx_lo), mnew_hi = fmaxf(m_hi, mx_hi);
      const float base_lo = mnew_lo == -INFINITY ? 0.f : mnew_lo;  // no live key yet: see header
      const float base_hi = mnew_hi == -INFINITY ? 0.f : mnew_hi;
      const float alpha_lo = exp2f(m_lo - base_lo), alpha_hi = exp2f(m_hi - base_hi);
      m_lo = mnew_lo;
      m_hi = mnew_hi;
      l_lo *= alpha_lo;
      l_hi *= alpha_hi;
#pragma unroll
      for (int dt = 0; dt < kDimTiles; ++dt) {
        o[dt][0] *= alpha_lo;
        o[dt][1] *= alpha_lo;
        o[dt][2] *= alpha_hi;
        o[dt][3] *= alpha_hi;
      }

      // P = 2^(x - m) as A fragments: 16-key step j covers the 8-key tiles 2j (a[0], a[1]) and
      // 2j + 1 (a[2], a[3]); see mma_16816's fragment table.
      uint32_t pa[kKeys / 16][4];
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt) {
        const float p0 = exp2f(s[nt][0] - base_lo), p1 = exp2f(s[nt][1] - base_lo);
        const float p2 = exp2f(s[nt][2] - base_hi), p3 = exp2f(s[nt][3] - base_hi);
        l_lo += p0 + p1;
        l_hi += p2 + p3;
        pa[nt / 2][(nt % 2) * 2 + 0] = pack_half2(p0, p1);  // row g
        pa[nt / 2][(nt % 2) * 2 + 1] = pack_half2(p2, p3);  // row g + 8
      }
#pragma unroll
      for (int j = 0; j < kKeys / 16; ++j)
#pragma unroll
        for (int dt = 0; dt < kDimTiles; ++dt) {  // B = V: B[key][dim] = vt[dim][key]
          const __half* vp = &sm.vt[8 * dt + g][16 * j + 2 * t];
          mma_16816(o[dt], pa[j], lds_half2(vp), lds_half2(vp + 8));
        }
    }
    __syncthreads();  // every warp is done with this tile before the next load overwrites it
  }

#pragma unroll
  for (int x = 1; x <= 2; x *= 2) {
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, x);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, x);
  }
  const float inv_lo = l_lo > 0.f ? 1.f / l_lo : 0.f, inv_hi = l_hi > 0.f ? 1.f / l_hi : 0.f;  // no key: zeros
  float* out_lo = out + r_lo * q_cols + h * D + 2 * t;
  float* out_hi = out + r_hi * q_cols + h * D + 2 * t;
#pragma unroll
  for (int dt = 0; dt < kDimTiles; ++dt) {
    if (r_lo < rows) *reinterpret_cast<float2*>(out_lo + 8 * dt) = make_float2(o[dt][0] * inv_lo, o[dt][1] * inv_lo);
    if (r_hi < rows) *reinterpret_cast<float2*>(out_hi + 8 * dt) = make_float2(o[dt][2] * inv_hi, o[dt][3] * inv_hi);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

bool attention_prefill_uses_mma(int64_t head_dim) { return head_dim == 64 || head_dim == 128; }

void attention_prefill_mma(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache, float* out,
                           int64_t rows, int64_t n_head, int64_t n_head_kv, int64_t head_dim, cudaStream_t s) {
  const char* name = "attention_prefill_mma";
  if (!attention_prefill_uses_mma(head_dim))
    fail("CUDA kernel ", name, ": head_dim must be 64 or 128 (got ", head_dim, ")");
  if (n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0)
    fail("CUDA kernel ", name, ": n_head (", n_head, ") must be a positive multiple of n_head_kv (", n_head_kv, ")");
  if (n_head > 65535) fail("CUDA kernel ", name, ": n_head ", n_head, " exceeds 65535");
  if (rows < 0) fail("CUDA kernel ", name, ": negative rows ", rows);
  if (rows == 0) return;
  if (!q || !pos || !k_cache || !v_cache || !out) fail("CUDA kernel ", name, ": null pointer");
  if (!aligned16(q) || !aligned16(k_cache) || !aligned16(v_cache) || !aligned16(out))
    fail("CUDA kernel ", name, ": q, k_cache, v_cache and out must be 16-byte aligned (vector loads and stores)");
  const int64_t n_tiles = (rows + kRows - 1) / kRows;
  const unsigned grid = grid_1d(n_tiles * n_head, 1, name);  // one CTA per (row tile, q head)
  const float scale_log2 = kLog2e / std::sqrt(static_cast<float>(head_dim));
  const int nh = static_cast<int>(n_head), group = static_cast<int>(n_head / n_head_kv);
  if (head_dim == 64)
    launch_pdl(name, attention_prefill_mma_kernel<64>, grid, kThreads, 0, s, q, pos, k_cache, v_cache, out, rows, nh,
               group, n_tiles, scale_log2);
  else
    launch_pdl(name, attention_prefill_mma_kernel<128>, grid, kThreads, 0, s, q, pos, k_cache, v_cache, out, rows, nh,
               group, n_tiles, scale_log2);
}

}  // namespace minfer::cuda
