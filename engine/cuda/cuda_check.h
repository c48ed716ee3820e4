// Checking every CUDA call and launch: a failure becomes minfer::Error naming the call (or the
// kernel) and CUDA's own words, never a silent wrong answer. Waits on the GPU are bounded.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"

namespace minfer::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line);

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda_error(e, what, file, line);
}

// After a <<<...>>> launch: a bad configuration fails here, naming the kernel. With
// MINFER_CUDA_SYNC=1 (debugging) an eager launch also waits, so a fault names its kernel.
void check_launch(const char* kernel, cudaStream_t s);

// Waits for the stream, but at most MINFER_CUDA_TIMEOUT_S seconds (default 120): a hung kernel
// becomes an Error naming `what`, not a hang.
void sync_bounded(cudaStream_t s, const char* what);
// The same for an event (work recorded before it).
void event_sync_bounded(cudaEvent_t e, const char* what);

// Records `e` on `s` so that the host and other streams can wait for it: inside a stream capture
// as an external event-record node (recorded by each launch of the graph; a plain record there
// would only order the capture), else a plain record (the external flag is refused there).
void record_visible(cudaEvent_t e, cudaStream_t s);

// Grid size along x for `total` work items of `per_block` each, checked against the hardware
// limit (64-bit totals: a tensor can have more than 2^31 elements).
unsigned grid_1d(int64_t total, int64_t per_block, const char* kernel);

}  // namespace minfer::cuda

#define CUDA_CHECK(call) ::minfer::cuda::check((call), #call, __FILE__, __LINE__)
