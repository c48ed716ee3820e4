#include "probes/tensor_compare.h"

#include "core/top_k.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace minfer {

TensorCompare compare_host(const float* a, const float* b, int64_t n, const CompareTolerance& tol) {
  CompareSums s;
  for (int64_t i = 0; i < n; ++i) {
    const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
    if (!fa || !fb) {
      const bool same = !fa && !fb && ((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i]);
      if (!same) ++s.nonfinite;
      continue;
    }
    const double x = a[i], y = b[i], d = x - y, ad = std::fabs(d);
    s.saa += x * x;
    s.sbb += y * y;
    s.sab += x * y;
    s.see += d * d;
    if (s.max_at < 0 || ad > s.max_abs) {  // the first of equal maxima stays
      s.max_abs = ad;
      s.max_at = i;
    }
    if (ad > tol.abs + tol.rel * std::fabs(y)) ++s.n_beyond;
  }
  return compare_from_sums(s);
}

TensorCompare compare_from_sums(const CompareSums& s) {
  TensorCompare c;
  const double saa = s.saa, sbb = s.sbb, sab = s.sab, see = s.see;
  c.max_abs_diff = s.max_at < 0 ? 0.0 : s.max_abs;
  c.max_abs_at = s.max_at;
  c.nonfinite_mismatch = s.nonfinite;
  c.n_beyond = s.n_beyond + s.nonfinite;
  c.cosine = saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : (saa == sbb ? 1.0 : 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  c.rel_l2 = sbb > 0 ? std::sqrt(see / sbb) : (see == 0 ? 0.0 : inf);
  if (c.nonfinite_mismatch > 0 || (see > 0 && sbb == 0)) c.sqnr_db = -kSqnrCapDb;
  else if (see == 0) c.sqnr_db = kSqnrCapDb;
  else c.sqnr_db = std::clamp(10 * std::log10(sbb / see), -kSqnrCapDb, kSqnrCapDb);
  return c;
}

std::vector<Outlier> outliers_host(const float* x, int64_t n, int k, const float* ref) {
  // |x| descending, then index ascending; NaN never enters.
  const auto before = [&](int64_t i, int64_t j) {
    const float ai = std::fabs(x[i]), aj = std::fabs(x[j]);
    return ai != aj ? ai > aj : i < j;
  };
  std::vector<Outlier> out;
  for (int64_t i : top_k_indices(n, k, before, [&](int64_t i) { return !std::isnan(x[i]); }))
    out.push_back({i, x[i], ref ? ref[i] : 0.0f});
  return out;
}

BlockScales block_scales_host(const float* x, int64_t rows, int64_t cols, int block) {
  BlockScales s;
  s.block_size = block;
  if (block <= 0 || rows <= 0 || cols <= 0) return s;
  double sum = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c0 = 0; c0 < cols; c0 += block) {
      float amax = 0;
      for (int64_t c = c0; c < std::min<int64_t>(cols, c0 + block); ++c) {
        const float v = x[r * cols + c];
        if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
      }
      const double d = amax / 127.0;
      s.min = s.blocks == 0 ? d : std::min(s.min, d);
      s.max = s.blocks == 0 ? d : std::max(s.max, d);
      sum += d;
      ++s.blocks;
    }
  s.mean = sum / static_cast<double>(s.blocks);
  return s;
}

}  // namespace minfer
