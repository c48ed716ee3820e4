// What the 128-row x 128-token Q4_0 / Q8_0 MMQ tiles (mmq_async.cu, mmq_wgmma_sm90a.cu) share:
// the shape rule, the grid, a CTA's view of its rows and tokens, and the raw-block copies (per K
// step of 4 blocks, a weight row's 4 blocks -- Q4_0 72 bytes = 9 x 8, Q8_0 136 = 17 x 8 -- and a
// token's 4 Q8_1 blocks -- 144 bytes = 9 x 16 -- by cp.async into shared memory, zeros past the
// matrix's rows and tokens: cp.async's source size 0).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"
#include "core/weight_type.h"
#include "cuda/cuda_check.h"

namespace minfer::cuda::mmq_raw {

constexpr int kRows = 128, kToks = 128;        // a CTA's weight rows and tokens
constexpr int kStepBlocks = 4;                 // blocks per K step
constexpr int kXRowBytes = kStepBlocks * 36;   // a token's 4 Q8_1 blocks
constexpr int kXChunks = kXRowBytes / 16;      // 16-byte copies per token and step
constexpr int kStepElems = kStepBlocks * 32;   // 128

// Q4_0 or Q8_0, whole K steps, rows of at most 2^24 (the 32-bit offsets inside a CTA's tile), w
// 8-byte and x 16-byte aligned (the copies' sizes).
inline bool tile_applies(WeightType t, int64_t n_in, const void* w, const void* x_q8_1) {
  return (t == WeightType::Q4_0 || t == WeightType::Q8_0) && n_in > 0 && n_in % kStepElems == 0 &&
         n_in <= (int64_t{1} << 24) && (reinterpret_cast<uintptr_t>(w) & 7u) == 0 &&
         (reinterpret_cast<uintptr_t>(x_q8_1) & 15u) == 0;
}

// The grid: a CTA per 128 rows x 128 tokens.
inline dim3 tile_grid(int64_t n_out, int64_t nt, const char* kernel) {
  const int64_t gy = (nt + kToks - 1) / kToks;
  if (gy > 65535) fail("CUDA kernel ", kernel, ": ", nt, " tokens exceed the grid (at most ", 65535 * kToks, ")");
  return dim3(grid_1d(n_out, kRows, kernel), static_cast<unsigned>(gy));
}

// A CTA's rows and tokens: where they start, how many exist, the bytes of a row of each (weight
// blocks of kBlockElems elements and kBlockBytes bytes).
struct Tile {
  int64_t row0, tok0, steps;
  uint32_t row_bytes, x_row_bytes;
  int n_rows, n_toks;
  const uint8_t* w;  // the CTA's first weight row
  const uint8_t* x;  // and first token's Q8_1 blocks
};
template <int kBlockBytes, int kBlockElems = 32>
__device__ __forceinline__ Tile cta_tile(const uint8_t* w, int64_t n_out, int64_t n_in, const uint8_t* x, int64_t nt) {
  Tile t;
  t.row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  t.tok0 = static_cast<int64_t>(blockIdx.y) * kToks;
  t.steps = n_in / kStepElems;
  t.row_bytes = static_cast<uint32_t>(n_in / kBlockElems * kBlockBytes);
  t.x_row_bytes = static_cast<uint32_t>(n_in / 32 * 36);
  t.n_rows = static_cast<int>(n_out - t.row0 < kRows ? n_out - t.row0 : kRows);
  t.n_toks = static_cast<int>(nt - t.tok0 < kToks ? nt - t.tok0 : kToks);
  t.w = w + t.row0 * t.row_bytes;
  t.x = x + t.tok0 * t.x_row_bytes;
  return t;
}

// 8 bytes into shared memory, the first n (0..8) of them from src (8-byte aligned), zeros after.
__device__ __forceinline__ void cp_async8_part(uint32_t dst, const void* src, int n) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async8(uint32_t dst, const void* src, bool ok) { cp_async8_part(dst, src, ok ? 8 : 0); }
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// The copies of K step `step` of tile `t`'s weight rows row0 .. row0 + kSpan - 1, by kThreads
// threads (tid among them), into the shared buffer wdst (the tile's rows kRowBytes apart). 32-bit
// offsets inside the CTA's tile (128 rows: < 2^32 for n_in up to 2^24, tile_applies) keep the
// addresses in few registers.
template <int kBlockBytes, int kRowBytes, int kThreads, int kSpan = kRows>
__device__ __forceinline__ void issue_w_step(const Tile& t, const void* wdst_p, uint32_t step, int tid, int row0 = 0) {
  const uint32_t wdst = static_cast<uint32_t>(__cvta_generic_to_shared(wdst_p));
  const uint8_t* __restrict__ w = t.w;
  const uint32_t row_bytes = t.row_bytes;
  const int n_rows = t.n_rows;
  constexpr int kW = kStepBlocks * kBlockBytes / 8;  // 8-byte copies per row
  const uint32_t wcol = step * (kStepBlocks * kBlockBytes);
#pragma unroll
  for (int c0 = 0; c0 < kSpan * kW; c0 += kThreads) {
    const int c = c0 + tid;
    if (kSpan * kW % kThreads != 0 && c >= kSpan * kW) break;
    const int r = row0 + c / kW, k = c % kW;
    const bool ok = r < n_rows;
    cp_async8(wdst + r * kRowBytes + 8 * k, w + ((ok ? r : 0) * row_bytes + wcol + 8 * k), ok);
  }
}

// As issue_w_step, plus the tokens' Q8_1 blocks into xdst (tokens kXRowBytes apart).
template <int kBlockBytes, int kRowBytes, int kThreads>
__device__ __forceinline__ void issue_step(const Tile& t, const void* wdst_p, const void* xdst_p, uint32_t step,
                                           int tid) {
  issue_w_step<kBlockBytes, kRowBytes, kThreads>(t, wdst_p, step, tid);
  const uint32_t xdst = static_cast<uint32_t>(__cvta_generic_to_shared(xdst_p));
  const uint8_t* __restrict__ x = t.x;
  const uint32_t x_row_bytes = t.x_row_bytes;
  const int n_toks = t.n_toks;
  const uint32_t xcol = step * kXRowBytes;
#pragma unroll
  for (int c0 = 0; c0 < kToks * kXChunks; c0 += kThreads) {
    const int c = c0 + tid;
    if (kToks * kXChunks % kThreads != 0 && c >= kToks * kXChunks) break;
    const int tk = c / kXChunks, k = c % kXChunks;
    const bool ok = tk < n_toks;
    cp_async16(xdst + tk * kXRowBytes + 16 * k, x + ((ok ? tk : 0) * x_row_bytes + xcol + 16 * k), ok);
  }
}

}  // namespace minfer::cuda::mmq_raw
