#include "probes/logits_summary.h"

#include "core/top_k.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace minfer {

LogitsSummary summarize_logits(const float* x, int64_t n, int32_t chosen, int top_k) {
  LogitsSummary s;
  s.n_vocab = n;
  s.chosen = chosen;
  const double nan = std::numeric_limits<double>::quiet_NaN();

  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(x[i])) m = std::max(m, static_cast<double>(x[i]));
    else ++s.nonfinite;
  }
  const bool any = s.nonfinite < n;
  double z = 0, ez = 0;
  if (any) {
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(x[i])) continue;
      const double d = x[i] - m, e = std::exp(d);
      z += e;
      ez += e * d;
    }
  }
  s.entropy = any ? std::max(0.0, std::log(z) - ez / z) : nan;
  const auto prob = [&](int64_t i) {
    return any && std::isfinite(x[i]) ? std::exp(x[i] - m) / z : 0.0;
  };
  // Non-finite logits sort last: they have no probability mass.
  const auto before = [&](int64_t a, int64_t b) {
    const bool fa = std::isfinite(x[a]), fb = std::isfinite(x[b]);
    if (fa != fb) return fa;
    if (fa && x[a] != x[b]) return x[a] > x[b];
    return a < b;
  };

  // Top-k with a bounded heap (the vocabulary is ~150k, k ~20).
  const int64_t k = std::min<int64_t>(std::max(top_k, 0), n);
  for (int64_t i : top_k_indices(n, k, before, [](int64_t) { return true; }))
    s.top.push_back({static_cast<int32_t>(i), prob(i), x[i]});

  if (chosen >= 0 && chosen < n) {
    int64_t rank = 0;
    for (int64_t i = 0; i < n; ++i) rank += before(i, chosen);
    s.chosen_rank = rank;
    s.chosen_p = prob(chosen);
  }
  return s;
}

}  // namespace minfer
