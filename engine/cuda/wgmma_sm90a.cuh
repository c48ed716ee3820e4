// What the wgmma kernels (*_sm90a.cu) share: shared-memory operand descriptors for K-major tiles
// with the 128-byte swizzle, and the fences and waits around warpgroup MMAs (PTX ISA, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate"). Only for files built for sm_90a.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_check.h"

namespace minfer::cuda::wgmma {

// A K-major operand tile: a 128-byte row per M (or N) index with the 128-byte swizzle (16-byte
// chunk c of row r at c ^ (r % 8)), 8-row groups 1024 bytes apart (the descriptor's stride; its
// leading offset is unused with this swizzle). Tiles must be 1024-byte aligned (base offset 0);
// the start address moves inside a row to select a K slice (the hardware swizzles the full address).
constexpr uint32_t kLbo = 16, kSbo = 1024;
__device__ __forceinline__ uint64_t smem_desc(const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return static_cast<uint64_t>((a & 0x3FFFF) >> 4) | (static_cast<uint64_t>(kLbo >> 4) << 16) |
         (static_cast<uint64_t>(kSbo >> 4) << 32) | (uint64_t{1} << 62);
}
// Byte offset of (row, 16-byte chunk c) in such a tile.
__device__ __forceinline__ int tile_off(int row, int c) { return row * 128 + ((c ^ (row & 7)) << 4); }

// Generic-proxy writes to shared memory (plain stores, cp.async) made visible to wgmma's operand
// reads (the async proxy); then a barrier for other threads' writes.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// Ties registers to the asm statements around them, so no read of a result moves above the wait
// that makes it valid.
template <int N>
__device__ __forceinline__ void fence_regs(int (&d)[N]) {
#pragma unroll
  for (int e = 0; e < N; ++e) asm volatile("" : "+r"(d[e]));
}
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int e = 0; e < N; ++e) asm volatile("" : "+f"(d[e]));
}

// The f32 results of an m64nN wgmma (element e = 4j + 2i + c is row row + 8i, token tok + 8j + c,
// with row and tok this thread's first: PTX ISA's D fragment layout) into y[token][n_out], plus
// bias[row] when given; rows and tokens past n_out / nt are skipped.
template <int N>
__device__ __forceinline__ void store_d(const float (&acc)[N], int64_t row, int64_t tok, int64_t n_out, int64_t nt,
                                        const float* __restrict__ bias, float* __restrict__ y) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t r = row + 8 * i;
    if (r >= n_out) continue;
    const float bv = bias ? bias[r] : 0.0f;
#pragma unroll
    for (int j = 0; j < N / 4; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t t = tok + 8 * j + c;
        if (t < nt) y[t * n_out + r] = __fadd_rn(acc[4 * j + 2 * i + c], bv);
      }
  }
}

// Lets `kernel` take `bytes` of dynamic shared memory (more than the default 48 KB); call once
// per kernel (the launchers keep a function-local static).
inline bool allow_smem(const void* kernel, size_t bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return true;
}

}  // namespace minfer::cuda::wgmma
