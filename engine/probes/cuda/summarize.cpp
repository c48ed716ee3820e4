// The device summaries' host planner: the job list and chunk list of a set of tensors, the
// record layout (one record per tensor, copied to one of two pinned host slots per step), and
// the records read back as TensorSummary, outliers and block scales. The kernels and their
// launches are summarize_kernels.cu.
#include "probes/cuda/summarize.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "probes/cuda/summary_records.h"
#include "probes/summarize.h"

namespace minfer::cuda {
namespace {

size_t align8(size_t n) { return (n + 7) & ~size_t(7); }
}  // namespace

DeviceSummaries::DeviceSummaries(const std::vector<SummaryTensor>& tensors, const SummarySpec& spec, int outliers)
    : spec_(spec), outliers_(outliers) {
  if (spec.hist_bins < 0 || spec.hist_bins > kMaxBins)
    fail("device summaries: ", spec.hist_bins, " histogram bins (at most ", kMaxBins, ")");
  if (outliers < 0 || outliers > kMaxOutliers)
    fail("device summaries: ", outliers, " outliers per tensor (at most ", kMaxOutliers, ")");
  std::vector<Job> jobs;
  std::vector<int> chunk_job, small, large;
  size_t offset = 0;
  for (const SummaryTensor& t : tensors) {
    Layout l{t.rows, t.cols, 1, 1, 0, 0, t.scale_block, offset, static_cast<int>(chunk_job.size()), 0, 0, 0};
    if (spec.grid_rows > 0 && spec.grid_cols > 0 && t.rows > 0 && t.cols > 0) {
      l.row_stride = grid_stride(t.rows, spec.grid_rows);
      l.col_stride = grid_stride(t.cols, spec.grid_cols);
      l.grid_rows = static_cast<int>((t.rows + l.row_stride - 1) / l.row_stride);
      l.grid_cols = static_cast<int>((t.cols + l.col_stride - 1) / l.col_stride);
    }
    if (t.scale_block > 0 && t.cols < t.scale_block)
      fail("device summaries: block scales of ", t.scale_block, "-element blocks over rows of ", t.cols);
    const int64_t n = t.rows * t.cols;
    // Only the pass kernels' tensors are cut into chunks; a small one is one small_kernel CTA.
    const bool is_small = n <= kChunk;
    const int n_chunks = is_small ? 0 : static_cast<int>((n + kChunk - 1) / kChunk);
    l.n_chunks = n_chunks;
    l.small_before = static_cast<int>(small.size());
    l.large_before = static_cast<int>(large.size());
    (is_small ? small : large).push_back(static_cast<int>(jobs.size()));
    jobs.push_back(Job{t.data, n, t.rows, t.cols, l.row_stride, l.col_stride, l.grid_rows, l.grid_cols, spec.hist_bins,
                       static_cast<int>(chunk_job.size()), n_chunks, outliers, t.scale_block, offset});
    chunk_job.insert(chunk_job.end(), static_cast<size_t>(n_chunks), static_cast<int>(jobs.size() - 1));
    offset += sizeof(Head) + sizeof(unsigned long long) * static_cast<size_t>(spec.hist_bins) +
              align8(sizeof(float) * static_cast<size_t>(l.grid_rows) * static_cast<size_t>(l.grid_cols)) +
              sizeof(Candidate) * static_cast<size_t>(outliers);
    offset = align8(offset);
    layout_.push_back(l);
  }
  record_bytes_ = std::max<size_t>(offset, 8);
  n_chunks_ = static_cast<int>(chunk_job.size());
  n_small_ = static_cast<int>(small.size());
  n_large_ = static_cast<int>(large.size());
  const size_t chunks = std::max<size_t>(chunk_job.size(), 1);
  jobs_.alloc(std::max<size_t>(jobs.size(), 1) * sizeof(Job), "device summaries (job list)");
  // Small then large tensor ids, each in tensor order: a range of tensors is a range of each.
  ids_.alloc(std::max<size_t>(jobs.size(), 1) * sizeof(int), "device summaries (tensor lists)");
  chunk_job_.alloc(chunks * sizeof(int), "device summaries (chunk list)");
  partials_.alloc(chunks * sizeof(Partial), "device summaries (partials)");
  candidates_.alloc(chunks * kMaxK * sizeof(Candidate), "device summaries (outlier candidates)");
  records_.alloc(record_bytes_, "device summaries (records)");
  if (!jobs.empty()) CUDA_CHECK(cudaMemcpy(jobs_.get(), jobs.data(), jobs.size() * sizeof(Job), cudaMemcpyHostToDevice));
  if (!chunk_job.empty())
    CUDA_CHECK(cudaMemcpy(chunk_job_.get(), chunk_job.data(), chunk_job.size() * sizeof(int), cudaMemcpyHostToDevice));
  small.insert(small.end(), large.begin(), large.end());
  if (!small.empty()) CUDA_CHECK(cudaMemcpy(ids_.get(), small.data(), small.size() * sizeof(int), cudaMemcpyHostToDevice));
  allow_large_shared_memory();
  for (int s = 0; s < 2; ++s) {
    CUDA_CHECK(cudaMallocHost(&host_[s], record_bytes_));
    CUDA_CHECK(cudaEventCreateWithFlags(&copied_[s], cudaEventDisableTiming));
  }
}

DeviceSummaries::~DeviceSummaries() {
  for (int s = 0; s < 2; ++s) {
    if (host_[s]) cudaFreeHost(host_[s]);
    if (copied_[s]) cudaEventDestroy(copied_[s]);
  }
}

void DeviceSummaries::enqueue(cudaStream_t s) { enqueue(s, 0, layout_.size()); }

void DeviceSummaries::enqueue(cudaStream_t s, size_t first, size_t end) { enqueue(s, s, first, end); }

std::array<int, 4> DeviceSummaries::id_ranges(size_t first, size_t end) const {
  if (first > end || end > layout_.size())
    fail("device summaries: tensor range [", first, ", ", end, ") outside the ", layout_.size(), " tensors");
  auto small_at = [&](size_t i) { return i < layout_.size() ? layout_[i].small_before : n_small_; };
  auto large_at = [&](size_t i) { return i < layout_.size() ? layout_[i].large_before : n_large_; };
  return {small_at(first), small_at(end), large_at(first), large_at(end)};
}

std::array<bool, 2> DeviceSummaries::streams_used(size_t first, size_t end) const {
  const auto [s0, s1, l0, l1] = id_ranges(first, end);
  return {s1 > s0, l1 > l0};
}

void DeviceSummaries::copy_to_host(cudaStream_t s, int slot) {
  CUDA_CHECK(cudaMemcpyAsync(host_[slot], records_.get(), record_bytes_, cudaMemcpyDeviceToHost, s));
  record_visible(copied_[slot], s);
  expect(slot);
}

const unsigned char* DeviceSummaries::record(int slot, size_t i) const {
  if (!arrived_[slot]) {  // one wait per step, not one per node
    event_sync_bounded(copied_[slot], "the step's node summaries");
    arrived_[slot] = true;
  }
  return host_[slot] + layout_.at(i).offset;
}

TensorSummary DeviceSummaries::read(int slot, size_t i) const {
  const unsigned char* rec = record(slot, i);
  const Layout& l = layout_[i];
  Head h;
  std::memcpy(&h, rec, sizeof h);
  TensorSummary out;
  if (spec_.stats || spec_.hist_bins > 0) {  // as summarize_host: stats also when the histogram needs them
    out.stats = TensorStats{h.min, h.max, h.mean, h.absmean, h.std, h.count, h.nan, h.inf};
  }
  if (l.grid_rows > 0) {
    out.grid.rows = l.grid_rows;
    out.grid.cols = l.grid_cols;
    out.grid.row_stride = l.row_stride;
    out.grid.col_stride = l.col_stride;
    out.grid.values.resize(static_cast<size_t>(l.grid_rows) * static_cast<size_t>(l.grid_cols));
    std::memcpy(out.grid.values.data(), rec + sizeof(Head) + sizeof(unsigned long long) * static_cast<size_t>(spec_.hist_bins),
                out.grid.values.size() * sizeof(float));
  }
  if (spec_.hist_bins > 0) {
    const bool any_finite = h.finite > 0;
    out.hist.lo = any_finite ? h.min : 0;
    out.hist.hi = any_finite ? h.max : 0;
    out.hist.counts.resize(static_cast<size_t>(spec_.hist_bins));  // counts < 2^63: same bits as uint64
    static_assert(sizeof(int64_t) == sizeof(unsigned long long));
    std::memcpy(out.hist.counts.data(), rec + sizeof(Head), out.hist.counts.size() * sizeof(int64_t));
    out.hist.underflow = h.underflow;
    out.hist.overflow = h.overflow;
  }
  return out;
}

std::vector<Outlier> DeviceSummaries::read_outliers(int slot, size_t i) const {
  const unsigned char* rec = record(slot, i);
  const Layout& l = layout_[i];
  Head h;
  std::memcpy(&h, rec, sizeof h);
  const size_t at = sizeof(Head) + sizeof(unsigned long long) * static_cast<size_t>(spec_.hist_bins) +
                    align8(sizeof(float) * static_cast<size_t>(l.grid_rows) * static_cast<size_t>(l.grid_cols));
  std::vector<Outlier> out;
  out.reserve(static_cast<size_t>(h.n_outliers));
  for (long long k = 0; k < h.n_outliers; ++k) {
    Candidate x;
    std::memcpy(&x, rec + at + static_cast<size_t>(k) * sizeof(Candidate), sizeof x);
    out.push_back(Outlier{x.index, x.value, 0.0f});
  }
  return out;
}

BlockScales DeviceSummaries::read_scales(int slot, size_t i) const {
  const unsigned char* rec = record(slot, i);
  Head h;
  std::memcpy(&h, rec, sizeof h);
  BlockScales s;
  s.block_size = layout_[i].scale_block;
  s.blocks = h.blocks;
  if (h.blocks > 0) {
    s.min = h.d_min;
    s.max = h.d_max;
    s.mean = h.d_sum / static_cast<double>(h.blocks);
  }
  return s;
}

}  // namespace minfer::cuda
