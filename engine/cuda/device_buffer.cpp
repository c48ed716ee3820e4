#include "cuda/device_buffer.h"

#include <cuda_runtime.h>

#include "cuda/cuda_check.h"

namespace minfer::cuda {

void DeviceBuffer::alloc(size_t bytes, const std::string& what) {
  release();
  if (bytes == 0) return;
  cudaError_t e = cudaMalloc(&p_, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the (non-sticky) allocation error
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    p_ = nullptr;
    fail("out of GPU memory allocating ", bytes / 1048576.0, " MiB for ", what, " (", free_b / 1048576.0,
         " MiB free of ", total_b / 1048576.0, " MiB)");
  }
  check(e, ("cudaMalloc for " + what).c_str(), __FILE__, __LINE__);
  bytes_ = bytes;
}

void DeviceBuffer::release() {
  if (p_) cudaFree(p_);  // errors on teardown are not actionable (a faulted context frees anyway)
  p_ = nullptr;
  bytes_ = 0;
}

}  // namespace minfer::cuda
