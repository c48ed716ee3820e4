// Weights of any type -> f16 (the W16 cache). Each output element is the f32 value quant/'s
// dequantize_row forms (same operations, see quant_blocks.cuh) rounded to nearest f16:
//   legacy:  d*(q - 8) | d*q + m | d*(q - 16) | d*q + m | d*q       (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0)
//   K:       (d*sc_j)*q - dmin*m_j (Q4_K, Q5_K),  (d*sc_j)*(q - 32) (Q6_K)
//   float:   F32 -> f16, F16 copied, BF16 -> f32 -> f16.
// A matrix of whole blocks is one flat run of blocks (rows are contiguous), so the kernels work
// on the flat array: memory-bound, each thread writes 8 halves as one 16-byte store.
#include "cuda/dequant.h"

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void store8(__half* y, const float (&v)[8]) {
  union {
    uint4 u;
    __half2 h[4];
  } out;
#pragma unroll
  for (int i = 0; i < 4; ++i) out.h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(y) = out.u;
}

// Thread-to-data: global thread c owns flat elements [8c, 8c+8): chunk c % (B/8) of block
// c / (B/8), B = block elements; one 16-byte store of 8 halves.
template <WeightType T>
__global__ void dequant_quant_f16_kernel(const uint8_t* __restrict__ w, int64_t n_chunks, __half* __restrict__ y) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= n_chunks) return;
  constexpr int kChunks = qb::kBlockElems<T> / 8;
  float v[8];
  qb::dequant8<T>(w + (c / kChunks) * qb::kBlockBytes<T>, static_cast<int>(c % kChunks), v);
  store8(y + 8 * c, v);
}

template <WeightType T>
__device__ __forceinline__ float load_float(const void* w, int64_t i) {
  if constexpr (T == WeightType::F32) return static_cast<const float*>(w)[i];
  else if constexpr (T == WeightType::F16) return qb::f16_bits(static_cast<const uint16_t*>(w)[i]);
  else return qb::bf16_bits(static_cast<const uint16_t*>(w)[i]);
}

// Thread-to-data: global thread c owns flat elements [8c, 8c+8) ∩ [0, n): a full chunk is one
// 16-byte store (and 16/32-byte loads), the ragged tail element by element.
template <WeightType T>
__global__ void dequant_float_f16_kernel(const void* __restrict__ w, int64_t n, __half* __restrict__ y) {
  const int64_t e0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  if (e0 >= n) return;
  if (e0 + 8 > n) {
    for (int64_t e = e0; e < n; ++e) y[e] = __float2half_rn(load_float<T>(w, e));
    return;
  }
  float v[8];
  if constexpr (T == WeightType::F32) {
    const float4 a = reinterpret_cast<const float4*>(static_cast<const float*>(w) + e0)[0];
    const float4 b = reinterpret_cast<const float4*>(static_cast<const float*>(w) + e0)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(w) + e0);
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint16_t lo = static_cast<uint16_t>(words[i] & 0xFFFF), hi = static_cast<uint16_t>(words[i] >> 16);
      v[2 * i] = T == WeightType::F16 ? qb::f16_bits(lo) : qb::bf16_bits(lo);
      v[2 * i + 1] = T == WeightType::F16 ? qb::f16_bits(hi) : qb::bf16_bits(hi);
    }
  }
  store8(y + e0, v);
}

template <WeightType T>
void launch_quant(const void* w, int64_t n, __half* y, cudaStream_t s, const char* kernel) {
  const int64_t n_chunks = n / 8;
  dequant_quant_f16_kernel<T><<<grid_1d(n_chunks, kThreads, kernel), kThreads, 0, s>>>(
      static_cast<const uint8_t*>(w), n_chunks, y);
  check_launch(kernel, s);
}
template <WeightType T>
void launch_float(const void* w, int64_t n, __half* y, cudaStream_t s, const char* kernel) {
  dequant_float_f16_kernel<T><<<grid_1d((n + 7) / 8, kThreads, kernel), kThreads, 0, s>>>(w, n, y);
  check_launch(kernel, s);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

void dequant_to_f16(WeightType t, const void* w, int64_t rows, int64_t cols, __half* y, cudaStream_t s) {
  constexpr const char* who = "dequant_to_f16";
  if (rows < 0 || cols < 0) fail(who, ": negative shape ", rows, "x", cols);
  if (rows == 0 || cols == 0) return;
  if (!w || !y) fail(who, ": null pointer");
  if (!aligned16(w) || !aligned16(y)) fail(who, ": weight and output must be 16-byte aligned");
  const int be = info(t).block_elems;
  if (cols % be != 0) fail(who, ": ", name(t), " row of ", cols, " elements is not a multiple of its block size ", be);
  if (rows > INT64_MAX / cols) fail(who, ": ", rows, "x", cols, " elements overflow");
  const int64_t n = rows * cols;
  switch (t) {
    case WeightType::F32: return launch_float<WeightType::F32>(w, n, y, s, "dequant_float_f16_kernel<F32>");
    case WeightType::F16: return launch_float<WeightType::F16>(w, n, y, s, "dequant_float_f16_kernel<F16>");
    case WeightType::BF16: return launch_float<WeightType::BF16>(w, n, y, s, "dequant_float_f16_kernel<BF16>");
    case WeightType::Q4_0: return launch_quant<WeightType::Q4_0>(w, n, y, s, "dequant_quant_f16_kernel<Q4_0>");
    case WeightType::Q4_1: return launch_quant<WeightType::Q4_1>(w, n, y, s, "dequant_quant_f16_kernel<Q4_1>");
    case WeightType::Q5_0: return launch_quant<WeightType::Q5_0>(w, n, y, s, "dequant_quant_f16_kernel<Q5_0>");
    case WeightType::Q5_1: return launch_quant<WeightType::Q5_1>(w, n, y, s, "dequant_quant_f16_kernel<Q5_1>");
    case WeightType::Q8_0: return launch_quant<WeightType::Q8_0>(w, n, y, s, "dequant_quant_f16_kernel<Q8_0>");
    case WeightType::Q4_K: return launch_quant<WeightType::Q4_K>(w, n, y, s, "dequant_quant_f16_kernel<Q4_K>");
    case WeightType::Q5_K: return launch_quant<WeightType::Q5_K>(w, n, y, s, "dequant_quant_f16_kernel<Q5_K>");
    case WeightType::Q6_K: return launch_quant<WeightType::Q6_K>(w, n, y, s, "dequant_quant_f16_kernel<Q6_K>");
    default: fail(who, ": weight type ", name(t), " is an activation format, not a weight type");
  }
}

}  // namespace minfer::cuda
