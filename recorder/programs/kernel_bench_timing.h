// minfer-kernel-bench's timing: identical copies of a launch's weights cycled so that none is
// L2-resident when read again, and a CUDA graph of back-to-back launches timed over replays.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"

namespace minfer::kbench {

constexpr size_t kAlign = 256;    // copies start 256-byte aligned, as DeviceWeights places tensors
constexpr int kMinLaunches = 20;  // per replay, at least (more when there are more copies)

inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Identical copies of the bytes one launch reads, kAlign-aligned, together at least `cycle_bytes`
// (one copy when it alone is larger): launch i reads copy(i), i.e. copy i % copies().
class WeightCopies {
 public:
  WeightCopies(const std::vector<uint8_t>& unit, size_t cycle_bytes, const std::string& what)
      : stride_(align_up(unit.size())),
        copies_(static_cast<int>(std::max<size_t>(1, (cycle_bytes + stride_ - 1) / stride_))) {
    buf_.alloc(stride_ * static_cast<size_t>(copies_), what + " (weight copies)");
    CUDA_CHECK(cudaMemcpy(buf_.get(), unit.data(), unit.size(), cudaMemcpyHostToDevice));
    for (int i = 1; i < copies_; ++i)
      CUDA_CHECK(cudaMemcpy(copy(i), buf_.get(), unit.size(), cudaMemcpyDeviceToDevice));
  }
  uint8_t* copy(int i) const { return buf_.as<uint8_t>() + static_cast<size_t>(i % copies_) * stride_; }
  int copies() const { return copies_; }

 private:
  size_t stride_;
  int copies_;
  cuda::DeviceBuffer buf_;
};

struct Timing {
  double us_median = 0, us_min = 0;
  int launches = 0, replays = 0;
};

struct Events {
  cudaEvent_t begin = nullptr, end = nullptr;
  Events() {
    CUDA_CHECK(cudaEventCreate(&begin));
    CUDA_CHECK(cudaEventCreate(&end));
  }
  ~Events() {
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
  }
};

// launch(i) enqueues launch i on s. `launches` of them (a multiple of the copies, so every replay
// cycles through all of them) are captured into one graph, replayed twice untimed (the first
// replay uploads the graph), then `replays` times between events.
inline Timing time_launches(cudaStream_t s, int copies, int replays, const std::function<void(int)>& launch) {
  Timing t;
  t.launches = copies * ((kMinLaunches + copies - 1) / copies);
  t.replays = replays;
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < t.launches; ++i) launch(i);
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(e);
  Events ev;
  std::vector<double> us;
  for (int r = -2; r < replays; ++r) {
    CUDA_CHECK(cudaEventRecord(ev.begin, s));
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaEventRecord(ev.end, s));
    cuda::event_sync_bounded(ev.end, "a timed replay");
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev.begin, ev.end));
    if (r >= 0) us.push_back(1e3 * ms / t.launches);
  }
  cudaGraphExecDestroy(exec);
  std::sort(us.begin(), us.end());
  t.us_median = us[us.size() / 2];
  t.us_min = us.front();
  return t;
}

}  // namespace minfer::kbench
