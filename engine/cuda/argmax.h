// The argmax of one row of n f32 logits on the device (greedy decoding). No CPU twin in ops.h
// (the sampler picks on the host); the test carries the obvious host reference. Graph-capturable.
// The trace's top-k is the logits summary's (engine/probes/cuda/logits_summary.h).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace minfer::cuda {

// out_index[0] = index of the largest x[i]: the lowest index on ties (-0 and +0 are equal); NaN
// never wins (0 when every value is NaN). n < 2^31. Multi-CTA: scratch is argmax_scratch_bytes()
// of device memory, zeroed once before its first use (each launch leaves it zeroed); calls that
// may run at the same time need scratch of their own.
void argmax(const float* x, int64_t n, int32_t* out_index, void* scratch, cudaStream_t s);
size_t argmax_scratch_bytes();

}  // namespace minfer::cuda
