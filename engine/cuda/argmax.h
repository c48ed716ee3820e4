// Logits on the device: argmax (greedy decoding) and top-k (sampling, trace top-k) over one row
// of n f32 logits. No CPU twin in ops.h (the sampler does this on the host); the tests carry the
// obvious host reference. Graph-capturable launchers.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

// out_index[0] = index of the largest x[i]: the lowest index on ties; NaN never wins (0 when every
// value is NaN). n < 2^31.
void argmax(const float* x, int64_t n, int32_t* out_index, cudaStream_t s);

// The k largest values (1 <= k <= 64, k <= n), sorted descending (ties: lower index first; -0
// ranks just below +0; NaN below -inf), with their indices. scratch: topk_scratch_floats(n, k)
// floats, 8-byte aligned (it holds 64-bit sort keys).
void topk(const float* x, int64_t n, int k, float* out_values, int32_t* out_indices, float* scratch, cudaStream_t s);
int64_t topk_scratch_floats(int64_t n, int k);

}  // namespace minfer::cuda
