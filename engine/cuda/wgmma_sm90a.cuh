// What the wgmma kernels (*_sm90a.cu) share: shared-memory operand descriptors for K-major tiles
// with the 128-byte swizzle, and the fences and waits around warpgroup MMAs (PTX ISA, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate"). Only for files built for sm_90a.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

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

}  // namespace minfer::cuda::wgmma
