#include "probes/summarize.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace minfer {

int64_t grid_stride(int64_t n, int cap) {
  if (cap <= 0 || n <= cap) return 1;
  return (n + cap - 1) / cap;
}

namespace {

// One pass for the range, sums and non-finite counts; a second for the variance (two passes
// keep std exact for tensors with a large mean, e.g. the massive-activation channels).
TensorStats compute_stats(const float* data, int64_t n) {
  TensorStats s;
  s.count = n;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, abssum = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = data[i];
    if (std::isnan(x)) { ++s.nan; continue; }
    if (std::isinf(x)) { ++s.inf; continue; }
    lo = std::min(lo, static_cast<double>(x));
    hi = std::max(hi, static_cast<double>(x));
    sum += x;
    abssum += std::fabs(x);
    ++finite;
  }
  if (finite == 0) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.min = s.max = s.mean = s.absmean = s.std = nan;
    return s;
  }
  s.min = lo;
  s.max = hi;
  s.mean = sum / static_cast<double>(finite);
  s.absmean = abssum / static_cast<double>(finite);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = data[i];
    if (!std::isfinite(x)) continue;
    const double d = x - s.mean;
    sq += d * d;
  }
  s.std = std::sqrt(sq / static_cast<double>(finite));
  return s;
}

ValueGrid compute_grid(const float* data, int64_t rows, int64_t cols, const SummarySpec& spec) {
  ValueGrid g;
  if (spec.grid_rows <= 0 || spec.grid_cols <= 0 || rows <= 0 || cols <= 0) return g;
  g.row_stride = grid_stride(rows, spec.grid_rows);
  g.col_stride = grid_stride(cols, spec.grid_cols);
  g.rows = static_cast<int>((rows + g.row_stride - 1) / g.row_stride);
  g.cols = static_cast<int>((cols + g.col_stride - 1) / g.col_stride);
  g.values.resize(static_cast<size_t>(g.rows) * g.cols);
  for (int r = 0; r < g.rows; ++r) {
    const float* row = data + r * g.row_stride * cols;
    for (int c = 0; c < g.cols; ++c) g.values[static_cast<size_t>(r) * g.cols + c] = row[c * g.col_stride];
  }
  return g;
}

Histogram compute_hist(const float* data, int64_t n, const TensorStats& s, int bins) {
  Histogram h;
  if (bins <= 0) return h;
  h.counts.assign(static_cast<size_t>(bins), 0);
  const bool any_finite = s.count - s.nan - s.inf > 0;
  h.lo = any_finite ? s.min : 0;
  h.hi = any_finite ? s.max : 0;
  const double width = h.hi - h.lo;
  const double scale = width > 0 ? bins / width : 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = data[i];
    if (std::isnan(x)) continue;
    if (std::isinf(x)) { (x < 0 ? h.underflow : h.overflow)++; continue; }
    int64_t b = static_cast<int64_t>((x - h.lo) * scale);
    h.counts[static_cast<size_t>(std::clamp<int64_t>(b, 0, bins - 1))]++;
  }
  return h;
}

}  // namespace

TensorSummary summarize_host(const float* data, int64_t rows, int64_t cols, const SummarySpec& spec) {
  TensorSummary out;
  const int64_t n = rows * cols;
  // The histogram needs the finite range, so stats are computed whenever either is asked for.
  if (spec.stats || spec.hist_bins > 0) out.stats = compute_stats(data, n);
  out.grid = compute_grid(data, rows, cols, spec);
  out.hist = compute_hist(data, n, out.stats, spec.hist_bins);
  return out;
}

}  // namespace minfer
