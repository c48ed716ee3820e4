// The device's streaming read bandwidth, measured: what decode speed is compared against
// (minfer-bench, minfer-kernel-bench).
#pragma once
#include <cuda_runtime.h>

namespace minfer::cuda {

// Median of five device-to-device copies of 512 MiB on `stream` (after one warm-up), counting
// each byte read once and written once: GB/s.
double measure_read_bandwidth_gbs(cudaStream_t stream);

}  // namespace minfer::cuda
