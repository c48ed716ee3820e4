// A step's logits summary (probes/logits_summary.h: top-k, entropy, the chosen token's rank and
// probability) computed on the device, so a traced greedy run copies a few hundred bytes per
// step instead of the 600 KB logits row. summarize_logits is the host twin and defines every
// rule; the test compares the two on random rows with NaN/Inf, ties and -0 planted.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_buffer.h"
#include "probes/logits_summary.h"

namespace minfer::cuda {

class DeviceLogitsSummary {
 public:
  static constexpr int kMaxTopK = 64;
  // A row of n logits, the top k (1..kMaxTopK) entries.
  DeviceLogitsSummary(int64_t n, int k);
  ~DeviceLogitsSummary();
  DeviceLogitsSummary(const DeviceLogitsSummary&) = delete;
  DeviceLogitsSummary& operator=(const DeviceLogitsSummary&) = delete;

  int64_t n() const { return n_; }
  int k() const { return k_; }
  // Two graph-capturable kernels (PDL launches) over the row x (device, n floats); chosen:
  // device pointer to the chosen token id (the greedy argmax), read when the kernels run.
  void enqueue(const float* x, const int32_t* chosen, cudaStream_t s);
  // Copies the result into host slot 0 or 1; graph-capturable (the copy's event is recorded as
  // an external node).
  void copy_to_host(cudaStream_t s, int slot);
  // The summary in host slot `slot`; waits (bounded) for that slot's copy.
  LogitsSummary read(int slot) const;

 private:
  int64_t n_;
  int k_;
  unsigned tiles_;
  DeviceBuffer cand_, partials_, record_;  // tiles x k candidate keys, tiles partials, the Record
  void* host_[2] = {nullptr, nullptr};  // pinned
  cudaEvent_t copied_[2] = {nullptr, nullptr};
};

}  // namespace minfer::cuda
