#include "cuda/device_bandwidth.h"

#include <algorithm>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"

namespace minfer::cuda {

double measure_read_bandwidth_gbs(cudaStream_t stream) {
  const size_t bytes = 512u << 20;
  DeviceBuffer a(bytes, "bandwidth probe"), b(bytes, "bandwidth probe");
  CUDA_CHECK(cudaMemsetAsync(a.get(), 1, bytes, stream));
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < 6; ++i) {
    CUDA_CHECK(cudaEventRecord(e0, stream));
    CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, stream));
    CUDA_CHECK(cudaEventRecord(e1, stream));
    sync_bounded(stream, "the bandwidth probe");
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (i > 0) ms.push_back(t);  // the first copy warms up
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

}  // namespace minfer::cuda
