// Node summaries computed on the device: the statistics, value grid and histogram of
// probes/summarize.h (summarize_host is the CPU twin and defines every rule), the largest |x|
// (outliers_host) and, for a matmul's activation, the 8-bit block scales (block_scales_host;
// both in probes/tensor_compare.h), for a list of tensors (or a range of it) at once, in one kernel
// for the small tensors and four for the large, whatever their number, so a traced decode step
// stays one CUDA graph. Results land in one device record buffer that the caller copies to pinned host
// memory (copy_to_host), one slot per step parity, so reading step N never blocks step N+1.
// The kernels and their launches are summarize_kernels.cu, the host planner summarize.cpp.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <vector>

#include "cuda/device_buffer.h"
#include "exec/observer.h"
#include "probes/tensor_compare.h"

namespace minfer::cuda {

struct SummaryTensor {
  const float* data;  // device, rows*cols row-major
  int64_t rows, cols;
  int scale_block = 0;  // > 0: also the block scales of an 8-bit quantization in such blocks
};

class DeviceSummaries {
 public:
  static constexpr int kMaxOutliers = 8;
  // outliers: how many largest-|x| elements to keep per tensor (0..kMaxOutliers).
  DeviceSummaries(const std::vector<SummaryTensor>& tensors, const SummarySpec& spec, int outliers);
  ~DeviceSummaries();
  DeviceSummaries(const DeviceSummaries&) = delete;
  DeviceSummaries& operator=(const DeviceSummaries&) = delete;

  const SummarySpec& spec() const { return spec_; }
  int outliers() const { return outliers_; }
  int scale_block(size_t i) const { return layout_.at(i).scale_block; }
  size_t tensors() const { return layout_.size(); }
  size_t record_bytes() const { return record_bytes_; }

  // The summary kernels (graph-capturable; fixed pointers, no host work per launch).
  void enqueue(cudaStream_t s);
  // The same for tensors [first, end) only: a traced step summarises each part of its graph as
  // soon as that part is computed, beside the rest of the step (cuda_dispatch.cpp).
  void enqueue(cudaStream_t s, size_t first, size_t end);
  // The same with the small tensors' kernel on `small` and the chunked tensors' on `chunked`
  // (streams that may run side by side); streams_used says which of the two get work.
  void enqueue(cudaStream_t small, cudaStream_t chunked, size_t first, size_t end);
  std::array<bool, 2> streams_used(size_t first, size_t end) const;
  // Copies the records into host slot (0 or 1); graph-capturable (the copy's event is recorded
  // as an external node, so the host can wait for it after each launch).
  void copy_to_host(cudaStream_t s, int slot);
  // A graph with the copy into `slot` was launched: the next read of the slot waits for it.
  void expect(int slot) { arrived_[slot] = false; }
  // Tensor i's results from host slot `slot`; each waits (bounded) for that slot's copy.
  TensorSummary read(int slot, size_t i) const;
  std::vector<Outlier> read_outliers(int slot, size_t i) const;
  BlockScales read_scales(int slot, size_t i) const;

 private:
  struct Layout {
    int64_t rows, cols, row_stride, col_stride;
    int grid_rows, grid_cols, scale_block;
    size_t offset;  // bytes into the record buffer
    int first_chunk, n_chunks;  // its chunks of the pass kernels (none: a small_kernel tensor)
    int small_before, large_before;  // small / chunked tensors before it
  };
  const unsigned char* record(int slot, size_t i) const;
  // Lets the kernels stage a chunk and the bins in dynamic shared memory (summarize_kernels.cu).
  static void allow_large_shared_memory();
  // Tensors [first, end) as small ids [0], [1] and chunked ids [2], [3] of their lists.
  std::array<int, 4> id_ranges(size_t first, size_t end) const;
  SummarySpec spec_;
  int outliers_ = 0;
  std::vector<Layout> layout_;
  size_t record_bytes_ = 0;
  int n_chunks_ = 0, n_small_ = 0, n_large_ = 0;
  DeviceBuffer jobs_, ids_, chunk_job_, partials_, candidates_, records_;
  unsigned char* host_[2] = {nullptr, nullptr};  // pinned
  cudaEvent_t copied_[2] = {nullptr, nullptr};
  mutable bool arrived_[2] = {false, false};     // the slot's copy is known complete
};

}  // namespace minfer::cuda
