// The k best of n items by a strict order, with a bounded heap (n ~150k logits or a tensor's
// elements, k ~20): used for the logits' top-k and a tensor's largest |x|.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace minfer {

// Indices i in [0, n) for which keep(i), the k first by `before` (a strict weak order: before(a,
// b) = a ranks ahead of b), sorted best first.
template <class Before, class Keep>
std::vector<int64_t> top_k_indices(int64_t n, int64_t k, Before before, Keep keep) {
  std::vector<int64_t> heap;  // the best k so far; front = the worst of them
  if (k <= 0) return heap;
  heap.reserve(static_cast<size_t>(k) + 1);
  for (int64_t i = 0; i < n; ++i) {
    if (!keep(i)) continue;
    if (static_cast<int64_t>(heap.size()) < k) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), before);
    } else if (before(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), before);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), before);
    }
  }
  std::sort(heap.begin(), heap.end(), before);
  return heap;
}

}  // namespace minfer
