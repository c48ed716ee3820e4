// The 128-row MMQ tile for Q4_0 and Q8_0 without loader warps (128 tokens per CTA): every warp
// copies raw weight and Q8_1 blocks into shared memory with cp.async (no registers, no unpacking
// on the way) and reads its mma fragments straight from the raw blocks. Same maths and the same bits as mmq.cu's
// kernels (mmq.cu's header); mmq() takes it for the 128-row tile where mmq_async_applies.
// Test: engine/tests/test_cuda_mmq.cpp (every case at tile 128 runs it).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// Q4_0 or Q8_0, n_in a multiple of 128 (whole 4-block K steps, 8-byte aligned row steps), w
// 8-byte and x 16-byte aligned.
bool mmq_async_applies(WeightType t, int64_t n_in, const void* w, const void* x_q8_1);

// As mmq() (mmq.h) with the 128-row tile; the caller checked the shapes and mmq_async_applies.
void mmq_async(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt,
               const float* bias, float* y, cudaStream_t s);

}  // namespace minfer::cuda
