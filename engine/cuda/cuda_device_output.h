// A CUDA step's node output, readable after the step until the next one: its summary, outliers
// and block scales from the step's device summaries (probes/cuda/summarize.h) when the step
// computed them, the paired trace's metrics on the device (probes/cuda/tensor_compare.h).
// Internal to the CUDA backend (cuda_backend*.cpp).
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/cuda_check.h"
#include "exec/observer.h"
#include "probes/cuda/summarize.h"
#include "probes/cuda/tensor_compare.h"
#include "probes/summarize.h"

namespace minfer::cuda {

// The summaries a step computed on the device (inside its CUDA graph when it has one).
struct StepSummaries {
  std::unique_ptr<cuda::DeviceSummaries> ds;
  std::vector<int> index;        // per node id: its tensor in ds, -1 when not summarised
  std::vector<int> node_of;      // per tensor of ds: its node id (node order)
  std::array<bool, 2> live{};    // host slot s holds the summaries of the step launched into it
  int read_slot = 0;             // the slot output() reads (Impl::reading)
  const Observer* observer = nullptr;  // whose node selection `index` follows (wants() is per observer)
};

// A node's output in device memory. Its summary comes from the step's device summaries when the
// step computed them with the asked spec; otherwise from a host copy (summarize_host). The paired
// trace's metrics against another device tensor (the reference backend's output of the node, or
// the node rerun on the reference path) are computed on the device too (cuda/tensor_compare.h):
// only their few bytes come back.
class DeviceOutput final : public NodeOutput {
 public:
  // lanes: the streams a step may run on (the buffer is read after both finished). cmp: the
  // backend's comparison scratch (null: the metrics go through host copies). serial: the
  // backend's count of launched steps (what a cached result belongs to).
  DeviceOutput(const float* d, int64_t rows, int64_t cols, std::array<cudaStream_t, 2> lanes, const StepSummaries* sums,
               int id, cuda::DeviceComparer* cmp, const uint64_t* serial)
      : d_(d), rows_(rows), cols_(cols), lanes_(lanes), sums_(sums), id_(id), cmp_(cmp), serial_(serial) {}
  TensorSummary summarize(const SummarySpec& spec) const override {
    const int i = device_index();
    if (i >= 0 && sums_->ds->spec() == spec) return sums_->ds->read(sums_->read_slot, static_cast<size_t>(i));
    std::vector<float> h = to_host();
    return summarize_host(h.data(), rows_, cols_, spec);
  }
  // On the device when the reference is a device tensor of the same size. A tensor against itself
  // (what rerun_node returns for a node both paths compute alike) is identical by definition: no
  // kernel, when the step's summary says every element is finite (max_abs_at is then 0).
  // Against another step's node output (the reference backend's) the reference's values at this
  // tensor's device outliers come back in the same wait, kept for outliers(k, ref).
  TensorCompare compare_to(const NodeOutput& ref, const CompareTolerance& tol) const override {
    const auto* r = dynamic_cast<const DeviceOutput*>(&ref);
    if (!r || !cmp_ || r->elements() != elements()) return NodeOutput::compare_to(ref, tol);
    const int i = device_index();
    if (r == this && i >= 0) {
      const TensorStats st = sums_->ds->read(sums_->read_slot, static_cast<size_t>(i)).stats;
      if (st.count > 0 && st.nan == 0 && st.inf == 0) {
        TensorCompare same;
        same.max_abs_at = 0;
        return same;
      }
    }
    wait();
    r->wait();
    if (r == this || r->id_ < 0 || i < 0 || sums_->ds->outliers() <= 0)
      return cmp_->compare(d_, r->d_, elements(), tol, lanes_[0]);
    RefOutliers c{r, *serial_, *r->serial_, sums_->read_slot, sums_->ds->read_outliers(sums_->read_slot, static_cast<size_t>(i))};
    std::vector<int64_t> idx;
    for (const Outlier& x : c.outliers) idx.push_back(x.index);
    std::vector<float> v;
    const TensorCompare t = cmp_->compare(d_, r->d_, elements(), tol, lanes_[0], idx, &v);
    for (size_t j = 0; j < c.outliers.size() && j < v.size(); ++j) c.outliers[j].ref_value = v[j];
    if (v.size() == c.outliers.size()) ref_outliers_ = std::move(c);
    return t;
  }
  // The step's device outliers; against a device reference, its values there are gathered on
  // the device (or were, by compare_to against the same reference in the same steps).
  std::vector<Outlier> outliers(int k, const NodeOutput* ref) const override {
    const int i = device_index();
    if (i >= 0 && sums_->ds->outliers() == k) {
      if (!ref) return sums_->ds->read_outliers(sums_->read_slot, static_cast<size_t>(i));
      const auto* r = dynamic_cast<const DeviceOutput*>(ref);
      if (r && cmp_ && r->elements() == elements() && k <= cuda::kMaxGather) {
        const RefOutliers& c = ref_outliers_;
        if (c.ref == r && c.serial == *serial_ && c.ref_serial == *r->serial_ && c.slot == sums_->read_slot)
          return c.outliers;
        std::vector<Outlier> o = sums_->ds->read_outliers(sums_->read_slot, static_cast<size_t>(i));
        if (o.empty()) return o;
        std::vector<int64_t> idx;
        for (const Outlier& x : o) idx.push_back(x.index);
        r->wait();
        const std::vector<float> v = cmp_->gather(r->d_, idx, lanes_[0]);
        for (size_t j = 0; j < o.size(); ++j) o[j].ref_value = v[j];
        return o;
      }
    }
    return NodeOutput::outliers(k, ref);
  }
  BlockScales block_scales(int64_t cols, int block) const override {
    const int i = device_index();
    if (i >= 0 && cols == cols_ && sums_->ds->scale_block(static_cast<size_t>(i)) == block)
      return sums_->ds->read_scales(sums_->read_slot, static_cast<size_t>(i));
    return NodeOutput::block_scales(cols, block);
  }
  std::vector<float> to_host() const override {
    std::vector<float> h(static_cast<size_t>(rows_ * cols_));
    wait();
    CUDA_CHECK(cudaMemcpy(h.data(), d_, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  const float* d_;
  int64_t rows_, cols_;
  std::array<cudaStream_t, 2> lanes_;
  const StepSummaries* sums_;
  int id_;
  cuda::DeviceComparer* cmp_;
  const uint64_t* serial_;
  // The outliers with a reference's values, as compare_to gathered them: valid while neither
  // backend has launched another step and the same host slot is read.
  struct RefOutliers {
    const DeviceOutput* ref = nullptr;
    uint64_t serial = 0, ref_serial = 0;
    int slot = -1;
    std::vector<Outlier> outliers;
  };
  mutable RefOutliers ref_outliers_;

  int64_t elements() const { return rows_ * cols_; }
  // The step that writes the tensor has finished.
  void wait() const {
    for (cudaStream_t s : lanes_) cuda::sync_bounded(s, "the step before reading a node output");
  }
  // This tensor's place in the read step's device summaries; -1 when it has none.
  int device_index() const {
    const StepSummaries& ss = *sums_;
    return id_ >= 0 && ss.live[static_cast<size_t>(ss.read_slot)] && ss.ds ? ss.index[static_cast<size_t>(id_)] : -1;
  }
};

}  // namespace minfer::cuda
