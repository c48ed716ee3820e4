// f32 activations -> Q8_1 blocks, the same arithmetic as quant/'s quantize_q8_1 so the bytes
// agree exactly (the device code is q8_1_device.cuh's quantize_q8_1_quad, shared with the fused
// decode matvecs of mmvq_fused.cu): per 32 consecutive values
//   amax = max |x|, d = amax / 127 (IEEE division), id = d ? 1/d : 0,
//   q = round-to-nearest-even(clamp(x * id, -127, 127))   (CPU: round_clamp; GPU: __float2int_rn)
//   stored d = f16(d), s = f16(f32(stored d) * sum(q)).
// Both sides round ties to even, so even exact .5 products agree; no FMA is possible (each
// step is one operation). A row of whole blocks makes the matrix one flat run of blocks.
#include "cuda/quantize.h"

#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"
#include "cuda/q8_1_device.cuh"
#include "quant/blocks.h"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;  // 32 blocks of 32 values per CTA

// Thread-to-data: 8 threads per block of 32 values; global thread t owns values [4t, 4t+4)
// (one float4 load, one 4-byte store of 4 codes) of block t/8. The 8 threads of a block are
// 8 aligned lanes of one warp: they reduce amax and sum(q) with xor-shuffles of width 8. Threads
// past the end still take part in the shuffles (full mask) but load and store nothing.
__global__ void quantize_q8_1_kernel(const float* __restrict__ x, int64_t n_blocks, BlockQ8_1* __restrict__ y) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t b = t / 8;
  const int sub = static_cast<int>(t % 8);
  const bool active = b < n_blocks;
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (active) v = reinterpret_cast<const float4*>(x)[t];
  const qb::Q8_1Quad q = qb::quantize_q8_1_quad(v);  // every lane: width-8 shuffles
  if (!active) return;
  qb::store_q8_1_quad(y + b, sub, q);
}

}  // namespace

void quantize_q8_1(const float* x, int64_t rows, int64_t cols, void* y, cudaStream_t s) {
  constexpr const char* kernel = "quantize_q8_1_kernel";
  if (rows < 0 || cols < 0) fail(kernel, ": negative shape ", rows, "x", cols);
  if (rows == 0 || cols == 0) return;
  if (cols % QK != 0) fail(kernel, ": rows of ", cols, " values are not a multiple of the Q8_1 block of ", QK);
  if (!x || !y) fail(kernel, ": null pointer");
  if ((reinterpret_cast<uintptr_t>(x) & 15u) != 0) fail(kernel, ": input must be 16-byte aligned");
  if ((reinterpret_cast<uintptr_t>(y) & 3u) != 0) fail(kernel, ": output must be 4-byte aligned");
  const int64_t n_blocks = rows * (cols / QK);
  launch_pdl(kernel, quantize_q8_1_kernel, grid_1d(n_blocks * 8, kThreads, kernel), kThreads, 0, s, x, n_blocks,
             static_cast<BlockQ8_1*>(y));
}

}  // namespace minfer::cuda
