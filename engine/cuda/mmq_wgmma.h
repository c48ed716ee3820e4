// A 128-row MMQ tile for Q4_0 and Q8_0 on Hopper's wgmma (int8 x int8 -> int32, operands in
// shared memory): same maths and the same bits as mmq.cu's and mmq_async.cu's kernels, with one
// tensor-core instruction per 64 rows x 128 tokens x 32-block. mmq() does not take it: on the H100
// it ran at mmq_async's speed (Q4_0) or 7 % behind it (Q8_0), both bound by the per-block scale
// updates, not by the tensor-core instruction (docs/benchmarks.md, session 23). It is the base for
// that work, run by minfer-kernel-bench (case family mmq_wgmma) and tested beside mmq.
// Test: engine/tests/test_cuda_mmq.cpp (tile "128 (mmq_wgmma)" on an sm_90 device).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// Q4_0 or Q8_0, n_in a multiple of 128, w 8-byte and x 16-byte aligned, and the device is
// compute capability 9.0 (the kernel is built for sm_90a only).
bool mmq_wgmma_applies(WeightType t, int64_t n_in, const void* w, const void* x_q8_1);

// As mmq() (mmq.h) with the 128-row tile; the caller checked the shapes and mmq_wgmma_applies.
void mmq_wgmma(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt,
               const float* bias, float* y, cudaStream_t s);

}  // namespace minfer::cuda
