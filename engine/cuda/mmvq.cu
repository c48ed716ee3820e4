// Decode matrix-vector products: y[o] = sum_k W[o][k] x[k] (+ bias[o]).
//
// mmvq (quantized W, x as Q8_1 blocks) streams where stream_usable says so (mmvq_stream.cu:
// 32-element block types with long rows in wide models); elsewhere the kernel below. A weight
// row is a run of blocks; each block splits into Codes<T>::kParts parts of 32 codes
// (quant_blocks.cuh). A part's dot with the activations is
// integer: dp4a over 4 codes at a time, then one float multiply-add per group:
//     part = sum_groups  d_w * d_a * isum  +  m_w * s_a
// (s_a = d_a * sum(a): the Q8_1 block sum folds in the weight offset of Q4_1/Q5_1/Q4_K/Q5_K).
// Memory-bound: every weight byte is read once, so the work is to keep enough loads in flight
// on 132 SMs: a CTA of 4 warps; short rows (< 96 parts: the 896-wide matrices and the LM head)
// give each warp its own row (4 rows per CTA), long rows (ffn_down: 4864) put all 4 warps on one
// row and add their sums through shared memory.
//
// gemv_float: the same CTA shapes; each lane takes 8 consecutive weights at a time (one 16-byte
// load of F16/BF16, two of F32) when the rows allow 16-byte alignment, else one at a time.
#include "cuda/mmvq.h"

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/mmvq_stream.h"
#include "cuda/pdl.cuh"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

// Warp sums -> one value per row in lane 0 of the row's first warp; writes y[row].
// Every thread of the CTA must call it (it may hold a barrier).
template <int kWarpsPerRow>
__device__ __forceinline__ void finish_row(float sum, int64_t row, int64_t n_out, const float* bias, float* y) {
  sum = qb::warp_sum(sum);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if constexpr (kWarpsPerRow > 1) {
    __shared__ float partial[kWarps];
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    if (warp % kWarpsPerRow != 0) return;
    sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kWarpsPerRow; ++i) sum += partial[warp + i];
  }
  if (lane == 0 && row < n_out) y[row] = sum + (bias ? bias[row] : 0.0f);
}

// Thread-to-data: CTA of 4 warps covers 4/kWarpsPerRow rows; row = blockIdx.x * (4/W) +
// warp / W. The row's 32*W threads stride over its (block, part) units: unit u = block u/kParts,
// part u%kParts (consecutive lanes read consecutive parts of a block: contiguous bytes).
template <WeightType T, int kWarpsPerRow>
__global__ void __launch_bounds__(kThreads)
    mmvq_kernel(const uint8_t* __restrict__ w, int64_t n_out, int64_t blocks_per_row,
                const BlockQ8_1* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  constexpr int kParts = qb::Codes<T>::kParts;
  constexpr int kActPerBlock = qb::kBlockElems<T> / QK;
  constexpr int kRowThreads = 32 * kWarpsPerRow;
  const int warp = threadIdx.x / 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarps / kWarpsPerRow) + warp / kWarpsPerRow;
  const int t = (warp % kWarpsPerRow) * 32 + threadIdx.x % 32;
  float sum = 0.0f;
  if (row < n_out) {
    const uint8_t* wrow = w + row * blocks_per_row * qb::kBlockBytes<T>;
    const int64_t units = blocks_per_row * kParts;
    for (int64_t u = t; u < units; u += kRowThreads) {
      const int64_t ib = u / kParts;
      sum += qb::dot_part_q8_1<T>(wrow + ib * qb::kBlockBytes<T>, x + ib * kActPerBlock, static_cast<int>(u % kParts));
    }
  }
  finish_row<kWarpsPerRow>(sum, row, n_out, bias, y);
}

template <WeightType T>
__device__ __forceinline__ float load_float(const void* w, int64_t i) {
  if constexpr (T == WeightType::F32) return static_cast<const float*>(w)[i];
  else if constexpr (T == WeightType::F16) return qb::f16_bits(static_cast<const uint16_t*>(w)[i]);
  else return qb::bf16_bits(static_cast<const uint16_t*>(w)[i]);
}

// Thread-to-data: rows as in mmvq_kernel; the row's 32*W threads stride over 8-element chunks
// (kVec8: n_in % 8 == 0 and w, x 16-byte aligned) or single elements.
template <WeightType T, int kWarpsPerRow, bool kVec8>
__global__ void __launch_bounds__(kThreads)
    gemv_float_kernel(const void* __restrict__ w, int64_t n_out, int64_t n_in, const float* __restrict__ x,
                      const float* __restrict__ bias, float* __restrict__ y) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  constexpr int kRowThreads = 32 * kWarpsPerRow;
  const int warp = threadIdx.x / 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarps / kWarpsPerRow) + warp / kWarpsPerRow;
  const int t = (warp % kWarpsPerRow) * 32 + threadIdx.x % 32;
  float sum = 0.0f;
  if (row < n_out) {
    const int64_t base = row * n_in;
    if constexpr (kVec8) {
      for (int64_t c = t; c < n_in / 8; c += kRowThreads) {
        const float4 x0 = reinterpret_cast<const float4*>(x)[2 * c], x1 = reinterpret_cast<const float4*>(x)[2 * c + 1];
        float wv[8];
        if constexpr (T == WeightType::F32) {
          const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(w) + base) + 2 * c;
          const float4 a = p[0], b = p[1];
          wv[0] = a.x, wv[1] = a.y, wv[2] = a.z, wv[3] = a.w, wv[4] = b.x, wv[5] = b.y, wv[6] = b.z, wv[7] = b.w;
        } else {
          const uint4 raw = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(w) + base)[c];
          const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const uint16_t lo = static_cast<uint16_t>(words[i] & 0xFFFF), hi = static_cast<uint16_t>(words[i] >> 16);
            wv[2 * i] = T == WeightType::F16 ? qb::f16_bits(lo) : qb::bf16_bits(lo);
            wv[2 * i + 1] = T == WeightType::F16 ? qb::f16_bits(hi) : qb::bf16_bits(hi);
          }
        }
        sum += wv[0] * x0.x + wv[1] * x0.y + wv[2] * x0.z + wv[3] * x0.w + wv[4] * x1.x + wv[5] * x1.y +
               wv[6] * x1.z + wv[7] * x1.w;
      }
    } else {
      for (int64_t k = t; k < n_in; k += kRowThreads) sum += load_float<T>(w, base + k) * x[k];
    }
  }
  finish_row<kWarpsPerRow>(sum, row, n_out, bias, y);
}

// 4 warps per row when a row has many units of work, else one warp per row.
bool wide_rows(int64_t units_per_row) { return units_per_row >= 96; }

template <WeightType T>
void launch_mmvq(const void* w, int64_t n_out, int64_t n_in, const void* x, const float* bias, float* y,
                 cudaStream_t s, const char* kernel) {
  const int64_t blocks_per_row = n_in / qb::kBlockElems<T>;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const BlockQ8_1*>(x);
  if (wide_rows(blocks_per_row * qb::Codes<T>::kParts))
    launch_pdl(kernel, mmvq_kernel<T, 4>, grid_1d(n_out, 1, kernel), kThreads, 0, s, wb, n_out, blocks_per_row, xb,
               bias, y);
  else
    launch_pdl(kernel, mmvq_kernel<T, 1>, grid_1d(n_out, kWarps, kernel), kThreads, 0, s, wb, n_out, blocks_per_row, xb,
               bias, y);
}

template <WeightType T, bool kVec8>
void launch_gemv_shape(const void* w, int64_t n_out, int64_t n_in, const float* x, const float* bias, float* y,
                       cudaStream_t s, const char* kernel) {
  if (wide_rows(n_in / 8))
    launch_pdl(kernel, gemv_float_kernel<T, 4, kVec8>, grid_1d(n_out, 1, kernel), kThreads, 0, s, w, n_out, n_in, x,
               bias, y);
  else
    launch_pdl(kernel, gemv_float_kernel<T, 1, kVec8>, grid_1d(n_out, kWarps, kernel), kThreads, 0, s, w, n_out, n_in,
               x, bias, y);
}
template <WeightType T>
void launch_gemv(const void* w, int64_t n_out, int64_t n_in, const float* x, const float* bias, float* y,
                 cudaStream_t s, const char* kernel) {
  const bool vec8 = n_in % 8 == 0 && (reinterpret_cast<uintptr_t>(w) & 15u) == 0 &&
                    (reinterpret_cast<uintptr_t>(x) & 15u) == 0;
  if (vec8) launch_gemv_shape<T, true>(w, n_out, n_in, x, bias, y, s, kernel);
  else launch_gemv_shape<T, false>(w, n_out, n_in, x, bias, y, s, kernel);
}

// mmvq's argument checks (n_out > 0 afterwards unless it returned false: nothing to do).
bool check_mmvq_args(const char* who, WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1,
                     const float* y) {
  if (!mmvq_supports(t))
    fail(who, ": weight type ", name(t), " is not supported (quantized weights only; F32/F16/BF16 use gemv_float)");
  if (n_out < 0 || n_in < 0) fail(who, ": negative shape ", n_out, "x", n_in);
  if (n_out == 0) return false;
  const int be = info(t).block_elems;
  if (n_in == 0 || n_in % be != 0)
    fail(who, ": ", name(t), " row of ", n_in, " elements is not a positive multiple of its block size ", be);
  if (!w || !x_q8_1 || !y) fail(who, ": null pointer");
  if ((reinterpret_cast<uintptr_t>(w) & 15u) != 0) fail(who, ": weight must be 16-byte aligned");
  if ((reinterpret_cast<uintptr_t>(x_q8_1) & 3u) != 0) fail(who, ": Q8_1 activations must be 4-byte aligned");
  return true;
}

}  // namespace

bool mmvq_supports(WeightType t) {
  switch (t) {
    case WeightType::Q4_0: case WeightType::Q4_1: case WeightType::Q5_0: case WeightType::Q5_1:
    case WeightType::Q8_0: case WeightType::Q4_K: case WeightType::Q5_K: case WeightType::Q6_K: return true;
    default: return false;
  }
}

bool mmvq_residual_usable(WeightType t, int64_t n_in) { return mmvq_supports(t) && stream_usable(t, n_in); }

void mmvq_residual(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, const float* bias,
                   float* y, const float* residual, float* y_res, cudaStream_t s) {
  constexpr const char* who = "mmvq_residual";
  if (!check_mmvq_args(who, t, w, n_out, n_in, x_q8_1, y)) return;
  if (!residual || !y_res) fail(who, ": null pointer");
  if (!stream_usable(t, n_in)) fail(who, ": ", name(t), " rows of ", n_in, " elements do not stream");
  const StreamInput in{n_in, x_q8_1, nullptr, nullptr, 0.0f, nullptr};
  const StreamMatrix m{t, w, nullptr, n_out, bias, y, residual, y_res, nullptr, nullptr};
  stream_matvec(in, &m, 1, s);
}

void mmvq(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, const float* bias, float* y,
          cudaStream_t s) {
  constexpr const char* who = "mmvq";
  if (!check_mmvq_args(who, t, w, n_out, n_in, x_q8_1, y)) return;
  if (stream_usable(t, n_in)) {
    const StreamInput in{n_in, x_q8_1, nullptr, nullptr, 0.0f, nullptr};
    const StreamMatrix m{t, w, nullptr, n_out, bias, y, nullptr, nullptr, nullptr, nullptr};
    return stream_matvec(in, &m, 1, s);
  }
  switch (t) {
    case WeightType::Q4_0: return launch_mmvq<WeightType::Q4_0>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q4_0>");
    case WeightType::Q4_1: return launch_mmvq<WeightType::Q4_1>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q4_1>");
    case WeightType::Q5_0: return launch_mmvq<WeightType::Q5_0>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q5_0>");
    case WeightType::Q5_1: return launch_mmvq<WeightType::Q5_1>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q5_1>");
    case WeightType::Q8_0: return launch_mmvq<WeightType::Q8_0>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q8_0>");
    case WeightType::Q4_K: return launch_mmvq<WeightType::Q4_K>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q4_K>");
    case WeightType::Q5_K: return launch_mmvq<WeightType::Q5_K>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q5_K>");
    case WeightType::Q6_K: return launch_mmvq<WeightType::Q6_K>(w, n_out, n_in, x_q8_1, bias, y, s, "mmvq_kernel<Q6_K>");
    default: fail(who, ": unreachable type ", name(t));
  }
}

void gemv_float(WeightType t, const void* w, int64_t n_out, int64_t n_in, const float* x, const float* bias, float* y,
                cudaStream_t s) {
  constexpr const char* who = "gemv_float";
  if (n_out < 0 || n_in < 0) fail(who, ": negative shape ", n_out, "x", n_in);
  if (n_out == 0) return;
  if (n_in == 0) fail(who, ": empty rows");
  if (!w || !x || !y) fail(who, ": null pointer");
  switch (t) {
    case WeightType::F32: return launch_gemv<WeightType::F32>(w, n_out, n_in, x, bias, y, s, "gemv_float_kernel<F32>");
    case WeightType::F16: return launch_gemv<WeightType::F16>(w, n_out, n_in, x, bias, y, s, "gemv_float_kernel<F16>");
    case WeightType::BF16: return launch_gemv<WeightType::BF16>(w, n_out, n_in, x, bias, y, s, "gemv_float_kernel<BF16>");
    default: fail(who, ": weight type ", name(t), " is not a float type (quantized weights use mmvq)");
  }
}

}  // namespace minfer::cuda
