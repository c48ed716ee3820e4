// Shared helpers of the GPU tests: skip with a visible reason when no usable GPU exists, device
// round trips and error measures with stated tolerances; the random inputs and weights are
// quant_test_data.h's (included here).
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/device_info.h"
#include "tests/quant_test_data.h"

namespace minfer::testing {

#define MINFER_REQUIRE_GPU()                                                        \
  do {                                                                              \
    std::string why_;                                                               \
    if (!minfer::cuda::device_usable(&why_)) GTEST_SKIP() << "SKIPPED (GPU test): " << why_; \
  } while (0)

template <class T>
cuda::DeviceBuffer to_device(const std::vector<T>& h, const char* what = "test input") {
  cuda::DeviceBuffer b(h.size() * sizeof(T), what);
  CUDA_CHECK(cudaMemcpy(b.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

template <class T>
std::vector<T> to_host(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> h(n);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h.data(), b.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// A device buffer filled with NaN bit patterns, so an output element no kernel wrote is caught.
inline cuda::DeviceBuffer poisoned(size_t bytes, const char* what = "test output") {
  cuda::DeviceBuffer b(bytes, what);
  CUDA_CHECK(cudaMemset(b.get(), 0xFF, bytes));
  return b;
}

// ||a - b|| / ||b|| (relative L2 error), in double; NaN anywhere gives +inf.
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// Every element finite (outputs are poisoned with NaN first) and |got - want| <= rel |want|;
// names the first few offenders.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rel * std::fabs(static_cast<double>(want[i])) + 1e-30;
    if (!std::isfinite(got[i]) || std::fabs(static_cast<double>(got[i]) - want[i]) > tol)
      if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements out of tolerance";
}

}  // namespace minfer::testing
