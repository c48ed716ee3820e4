// Embedding lookup: y[i][c] = value of element c of row ids[i] of w, computed as quant/'s
// dequantize_row computes it (quant_blocks.cuh's dequant8), so y equals cpu::get_rows.
// One output row per CTA column of the grid; small (a decode step reads one row), so plain
// stores: each thread writes 8 consecutive floats.
#include "cuda/get_rows.h"

#include <cmath>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 128;

// Thread-to-data: blockIdx.x = output row i; thread c = blockIdx.y * 128 + threadIdx.x owns
// elements [8c, 8c+8) of that row (chunk c % (B/8) of block c / (B/8) of row ids[i]).
template <WeightType T>
__global__ void get_rows_quant_kernel(const uint8_t* __restrict__ w, int64_t n_rows, int64_t n_cols,
                                      const int32_t* __restrict__ ids, float* __restrict__ y) {
  pdl_wait();  // PDL: before reading ids and writing y, and before the early return (pdl.cuh)
  pdl_launch_dependents();
  const int64_t i = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= n_cols / 8) return;
  float* out = y + i * n_cols + 8 * c;
  const int32_t id = ids[i];
  if (id < 0 || id >= n_rows) {  // the host checks ids first; never read outside w
    for (int k = 0; k < 8; ++k) out[k] = NAN;
    return;
  }
  constexpr int kChunks = qb::kBlockElems<T> / 8;
  const int64_t row_bytes = n_cols / qb::kBlockElems<T> * qb::kBlockBytes<T>;
  float v[8];
  qb::dequant8<T>(w + id * row_bytes + (c / kChunks) * qb::kBlockBytes<T>, static_cast<int>(c % kChunks), v);
#pragma unroll
  for (int k = 0; k < 8; ++k) out[k] = v[k];
}

template <WeightType T>
__device__ __forceinline__ float load_float(const void* w, int64_t i) {
  if constexpr (T == WeightType::F32) return static_cast<const float*>(w)[i];
  else if constexpr (T == WeightType::F16) return qb::f16_bits(static_cast<const uint16_t*>(w)[i]);
  else return qb::bf16_bits(static_cast<const uint16_t*>(w)[i]);
}

// Thread-to-data: as above, thread c owns elements [8c, 8c+8) ∩ [0, n_cols) of row i.
template <WeightType T>
__global__ void get_rows_float_kernel(const void* __restrict__ w, int64_t n_rows, int64_t n_cols,
                                      const int32_t* __restrict__ ids, float* __restrict__ y) {
  pdl_wait();  // PDL: as above
  pdl_launch_dependents();
  const int64_t i = blockIdx.x;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * 8;
  if (c0 >= n_cols) return;
  const int64_t c1 = c0 + 8 < n_cols ? c0 + 8 : n_cols;
  float* out = y + i * n_cols;
  const int32_t id = ids[i];
  const bool valid = id >= 0 && id < n_rows;
  for (int64_t c = c0; c < c1; ++c) out[c] = valid ? load_float<T>(w, id * n_cols + c) : NAN;
}

template <WeightType T>
void launch(const void* w, int64_t n_rows, int64_t n_cols, const int32_t* ids, int64_t n_ids, float* y,
            cudaStream_t s, const char* kernel) {
  const unsigned gx = grid_1d(n_ids, 1, kernel);
  const int64_t gy = ((n_cols + 7) / 8 + kThreads - 1) / kThreads;
  if (gy > 65535) fail("CUDA kernel ", kernel, ": rows of ", n_cols, " elements are too wide");
  const dim3 grid(gx, static_cast<unsigned>(gy));
  if constexpr (T == WeightType::F32 || T == WeightType::F16 || T == WeightType::BF16)
    launch_pdl(kernel, get_rows_float_kernel<T>, grid, kThreads, 0, s, w, n_rows, n_cols, ids, y);
  else
    launch_pdl(kernel, get_rows_quant_kernel<T>, grid, kThreads, 0, s, static_cast<const uint8_t*>(w), n_rows, n_cols,
               ids, y);
}

}  // namespace

void get_rows(WeightType t, const void* w, int64_t n_rows, int64_t n_cols, const int32_t* ids, int64_t n_ids,
              float* y, cudaStream_t s) {
  constexpr const char* who = "get_rows";
  if (n_rows < 0 || n_cols < 0 || n_ids < 0) fail(who, ": negative size");
  if (n_ids == 0 || n_cols == 0) return;
  if (n_rows == 0) fail(who, ": the table has no rows");
  if (!w || !ids || !y) fail(who, ": null pointer");
  if ((reinterpret_cast<uintptr_t>(w) & 15u) != 0) fail(who, ": weight must be 16-byte aligned");
  const int be = info(t).block_elems;
  if (n_cols % be != 0) fail(who, ": ", name(t), " row of ", n_cols, " elements is not a multiple of its block size ", be);
  switch (t) {
    case WeightType::F32: return launch<WeightType::F32>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_float_kernel<F32>");
    case WeightType::F16: return launch<WeightType::F16>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_float_kernel<F16>");
    case WeightType::BF16: return launch<WeightType::BF16>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_float_kernel<BF16>");
    case WeightType::Q4_0: return launch<WeightType::Q4_0>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q4_0>");
    case WeightType::Q4_1: return launch<WeightType::Q4_1>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q4_1>");
    case WeightType::Q5_0: return launch<WeightType::Q5_0>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q5_0>");
    case WeightType::Q5_1: return launch<WeightType::Q5_1>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q5_1>");
    case WeightType::Q8_0: return launch<WeightType::Q8_0>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q8_0>");
    case WeightType::Q4_K: return launch<WeightType::Q4_K>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q4_K>");
    case WeightType::Q5_K: return launch<WeightType::Q5_K>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q5_K>");
    case WeightType::Q6_K: return launch<WeightType::Q6_K>(w, n_rows, n_cols, ids, n_ids, y, s, "get_rows_quant_kernel<Q6_K>");
    default: fail(who, ": weight type ", name(t), " is an activation format, not a weight type");
  }
}

}  // namespace minfer::cuda
