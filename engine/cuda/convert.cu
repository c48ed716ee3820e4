// Float format conversions: y[i] = convert(x[i]).
// f32 -> f16/bf16 rounds to nearest even (__float2half_rn / __float2bfloat16_rn: one cvt.rn
// instruction, overflow to inf, subnormals kept); f16/bf16 -> f32 is exact.
// Memory-bound: each thread converts 4 consecutive elements (one float4 and one 8-byte
// half/bf16 access when both pointers are suitably aligned), the tail scalar.
#include "cuda/convert.h"

#include "cuda/cuda_check.h"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kPerThread = 4;

bool aligned(const void* p, uintptr_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

__device__ __forceinline__ __half to_narrow(float v, __half*) { return __float2half_rn(v); }
__device__ __forceinline__ __nv_bfloat16 to_narrow(float v, __nv_bfloat16*) { return __float2bfloat16_rn(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

// Four 2-byte values moved as one 8-byte word.
template <class H>
struct alignas(8) Narrow4 {
  H v[4];
};

// Thread-to-data: global thread t owns elements [4t, 4t+4).
template <class H>
__global__ void narrow_kernel(const float* x, H* y, int64_t n, bool vec4) {
  const int64_t i0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPerThread;
  if (i0 >= n) return;
  if (vec4 && i0 + kPerThread <= n) {
    const float4 v = *reinterpret_cast<const float4*>(x + i0);
    Narrow4<H> o;
    o.v[0] = to_narrow(v.x, static_cast<H*>(nullptr));
    o.v[1] = to_narrow(v.y, static_cast<H*>(nullptr));
    o.v[2] = to_narrow(v.z, static_cast<H*>(nullptr));
    o.v[3] = to_narrow(v.w, static_cast<H*>(nullptr));
    *reinterpret_cast<Narrow4<H>*>(y + i0) = o;
    return;
  }
  for (int64_t i = i0; i < n && i < i0 + kPerThread; ++i) y[i] = to_narrow(x[i], static_cast<H*>(nullptr));
}

// Thread-to-data: global thread t owns elements [4t, 4t+4).
template <class H>
__global__ void widen_kernel(const H* x, float* y, int64_t n, bool vec4) {
  const int64_t i0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPerThread;
  if (i0 >= n) return;
  if (vec4 && i0 + kPerThread <= n) {
    const Narrow4<H> v = *reinterpret_cast<const Narrow4<H>*>(x + i0);
    *reinterpret_cast<float4*>(y + i0) = make_float4(to_f32(v.v[0]), to_f32(v.v[1]), to_f32(v.v[2]), to_f32(v.v[3]));
    return;
  }
  for (int64_t i = i0; i < n && i < i0 + kPerThread; ++i) y[i] = to_f32(x[i]);
}

unsigned grid_for(const char* kernel, const void* x, const void* y, int64_t n) {
  if (n < 0) fail("CUDA kernel ", kernel, ": negative size ", n);
  if (n > 0 && (!x || !y)) fail("CUDA kernel ", kernel, ": null pointer");
  return n == 0 ? 0 : grid_1d((n + kPerThread - 1) / kPerThread, kThreads, kernel);
}

template <class H>
void narrow(const char* kernel, const float* x, H* y, int64_t n, cudaStream_t s) {
  const unsigned grid = grid_for(kernel, x, y, n);
  if (grid == 0) return;
  narrow_kernel<H><<<grid, kThreads, 0, s>>>(x, y, n, aligned(x, 16) && aligned(y, 8));
  check_launch(kernel, s);
}

template <class H>
void widen(const char* kernel, const H* x, float* y, int64_t n, cudaStream_t s) {
  const unsigned grid = grid_for(kernel, x, y, n);
  if (grid == 0) return;
  widen_kernel<H><<<grid, kThreads, 0, s>>>(x, y, n, aligned(x, 8) && aligned(y, 16));
  check_launch(kernel, s);
}

}  // namespace

void f32_to_f16(const float* x, __half* y, int64_t n, cudaStream_t s) { narrow("f32_to_f16", x, y, n, s); }
void f16_to_f32(const __half* x, float* y, int64_t n, cudaStream_t s) { widen("f16_to_f32", x, y, n, s); }
void f32_to_bf16(const float* x, __nv_bfloat16* y, int64_t n, cudaStream_t s) { narrow("f32_to_bf16", x, y, n, s); }
void bf16_to_f32(const __nv_bfloat16* x, float* y, int64_t n, cudaStream_t s) { widen("bf16_to_f32", x, y, n, s); }

}  // namespace minfer::cuda
