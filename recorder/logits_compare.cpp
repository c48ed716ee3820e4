#include "logits_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace minfer::trace {
namespace {

// log-softmax pieces and the top two of one distribution.
struct Dist {
  double max = -std::numeric_limits<double>::infinity();
  double log_z = 0;
  int32_t top1 = -1, top2 = -1;
  double log_p(float x) const { return x - max - log_z; }
};

Dist dist(const float* x, int64_t n) {
  Dist d;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    const auto id = static_cast<int32_t>(i);
    if (d.top1 < 0 || x[i] > x[d.top1]) {
      d.top2 = d.top1;
      d.top1 = id;
    } else if (d.top2 < 0 || x[i] > x[d.top2]) {
      d.top2 = id;
    }
  }
  if (d.top1 < 0) return d;
  d.max = x[d.top1];
  double z = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) z += std::exp(x[i] - d.max);
  d.log_z = std::log(z);
  return d;
}

double margin(const Dist& d, const float* x) {
  if (d.top1 < 0) return std::nan("");
  const double p1 = std::exp(d.log_p(x[d.top1]));
  return d.top2 < 0 ? p1 : p1 - std::exp(d.log_p(x[d.top2]));
}

}  // namespace

LogitsCompare compare_logits(const float* a, const float* b, int64_t n) {
  const Dist da = dist(a, n), db = dist(b, n);
  LogitsCompare c;
  c.top1_a = da.top1;
  c.top1_b = db.top1;
  c.margin_a = margin(da, a);
  c.margin_b = margin(db, b);
  if (da.top1 < 0 || db.top1 < 0) {
    c.kl = std::nan("");
    return c;
  }
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i])) continue;  // p_a = 0 adds nothing
    if (!std::isfinite(b[i])) {  // mass where B has none
      c.kl = std::numeric_limits<double>::infinity();
      return c;
    }
    const double la = da.log_p(a[i]);
    kl += std::exp(la) * (la - db.log_p(b[i]));
  }
  c.kl = std::max(kl, 0.0);
  return c;
}

}  // namespace minfer::trace
