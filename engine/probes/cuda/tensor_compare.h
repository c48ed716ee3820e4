// A paired trace's full-tensor metrics on the device: a tensor against its reference
// (compare_host in probes/tensor_compare.h is the CPU twin and defines every rule; both finish with
// compare_from_sums), and the reference's values at a few indices (the outliers' `ref_value`).
// The tensors never leave the device: a comparison brings back one CompareSums (64 bytes).
// Test: engine/tests/test_cuda_tensor_compare.cpp.
//
// Two kernels. compare_partials_kernel: CTA b (256 threads) takes elements b*256 + t, stepping by
// the grid's width, and gathers a CompareSums in double (sums of a^2, b^2, ab, (a-b)^2, the
// largest |a-b| at its lowest index, the counts); cub::BlockReduce joins the CTA's threads and the
// CTA writes its partial. compare_finish_kernel (one CTA) joins the partials the same way. The grid
// is ceil(n / 256) CTAs capped at kMaxCompareCtas, so the order of every sum depends on n alone:
// the same two tensors give the same bits every time (not the host's bits: the host sums in
// element order).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/device_buffer.h"
#include "probes/tensor_compare.h"

namespace minfer::cuda {

inline constexpr int kMaxCompareCtas = 512;

// Partials of a, b (device, n floats each) into partials[0..ctas) and their join into *out
// (device). partials: room for kMaxCompareCtas CompareSums. Graph-capturable; no host work.
void compare_sums(const float* a, const float* b, int64_t n, const CompareTolerance& tol, CompareSums* partials,
                  CompareSums* out, cudaStream_t s);

// out[i] = x[idx[i]] for i < k (k <= kMaxGather), the indices passed by value.
inline constexpr int kMaxGather = 16;
void gather_values(const float* x, const int64_t* idx, int k, float* out, cudaStream_t s);

// What a backend's node outputs share to compute the metrics in place: the scratch of the two
// kernels and a pinned landing place for the results. Each call enqueues on `s` and waits
// (bounded) for its few bytes; the caller makes sure the tensors are written before (`s` after
// their writers, or the writers' streams waited for). Not thread-safe: one run thread.
class DeviceComparer {
 public:
  DeviceComparer();
  ~DeviceComparer();
  DeviceComparer(const DeviceComparer&) = delete;
  DeviceComparer& operator=(const DeviceComparer&) = delete;

  // With gather_idx (at most kMaxGather indices), b's values there come back in the same wait,
  // into *gathered: a paired trace's outliers' `ref_value`s cost no second round trip.
  TensorCompare compare(const float* a, const float* b, int64_t n, const CompareTolerance& tol, cudaStream_t s,
                        const std::vector<int64_t>& gather_idx = {}, std::vector<float>* gathered = nullptr);
  // x[idx[i]] for every index (at most kMaxGather).
  std::vector<float> gather(const float* x, const std::vector<int64_t>& idx, cudaStream_t s);

 private:
  DeviceBuffer partials_, result_, gathered_;
  void* host_ = nullptr;  // pinned: a CompareSums, then kMaxGather floats
};

}  // namespace minfer::cuda
