// NodeOutput's host defaults for the paired-trace metrics: copy to host, run the host loops.
#include "core/error.h"
#include "exec/observer.h"

namespace minfer {

TensorCompare NodeOutput::compare_to(const NodeOutput& ref, const CompareTolerance& tol) const {
  const std::vector<float> a = to_host(), b = ref.to_host();
  if (a.size() != b.size()) fail("compare_to: tensors of ", a.size(), " and ", b.size(), " elements");
  return compare_host(a.data(), b.data(), static_cast<int64_t>(a.size()), tol);
}

std::vector<Outlier> NodeOutput::outliers(int k, const NodeOutput* ref) const {
  const std::vector<float> a = to_host();
  std::vector<float> b;
  if (ref) {
    b = ref->to_host();
    if (a.size() != b.size()) fail("outliers: tensors of ", a.size(), " and ", b.size(), " elements");
  }
  return outliers_host(a.data(), static_cast<int64_t>(a.size()), k, ref ? b.data() : nullptr);
}

BlockScales NodeOutput::block_scales(int64_t cols, int block) const {
  const std::vector<float> a = to_host();
  if (cols <= 0 || static_cast<int64_t>(a.size()) % cols != 0)
    fail("block_scales: ", a.size(), " elements are not rows of ", cols);
  return block_scales_host(a.data(), static_cast<int64_t>(a.size()) / cols, cols, block);
}

}  // namespace minfer
