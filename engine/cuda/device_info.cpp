#include "cuda/device_info.h"

#include <cuda_runtime.h>

#include <sstream>

#include "cuda/cuda_check.h"

namespace minfer::cuda {

bool device_usable(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("no usable CUDA driver/device (") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device found";
    return false;
  }
  cudaDeviceProp p{};
  e = cudaGetDeviceProperties(&p, 0);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cannot query CUDA device 0: ") + cudaGetErrorString(e);
    return false;
  }
  if (p.major < 9) {
    if (why) {
      std::ostringstream os;
      os << "GPU '" << p.name << "' has compute capability " << p.major << "." << p.minor
         << "; minfer's CUDA kernels are built for sm_90 (Hopper) and newer";
      *why = os.str();
    }
    return false;
  }
  return true;
}

std::string device_description() {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "cuda device 0";
  int drv = 0;
  cudaDriverGetVersion(&drv);
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << p.name << " (sm_" << p.major << p.minor << ", " << p.totalGlobalMem / 1073741824.0 << " GiB, "
     << p.multiProcessorCount << " SMs, driver " << drv / 1000 << "." << (drv % 1000) / 10 << ")";
  return os.str();
}

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return v > 0 ? v : 1;
  }();
  return n;
}

bool device_is_sm90() {
  static const bool yes = [] {
    int dev = 0, major = 0, minor = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    return major == 9 && minor == 0;
  }();
  return yes;
}

}  // namespace minfer::cuda
