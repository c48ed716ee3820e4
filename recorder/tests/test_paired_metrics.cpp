// The paired-trace metrics (engine/probes/tensor_compare.h, recorder/logits_compare.h) against
// plain recomputations written here, in long double, on random tensors with planted outliers
// and an int8-like error (values rounded to 32-element blocks of amax/127, as MMQ rounds its
// activations): cosine, SQNR, max |a-b| and its place, relative L2, the count beyond the
// tolerance, the outliers, the block scales, NodeOutput's host defaults, and KL / margins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "exec/observer.h"
#include "logits_compare.h"
#include "probes/tensor_compare.h"
#include "synthetic.h"

using namespace minfer;
using trace::compare_logits;

namespace {

constexpr int64_t kRows = 7, kCols = 96;

// The reference: normal values, one massive channel and a few planted outliers.
std::vector<float> reference_tensor(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> b(static_cast<size_t>(kRows * kCols));
  for (auto& x : b) x = nd(rng);
  for (int64_t r = 0; r < kRows; ++r) b[static_cast<size_t>(r * kCols + 7)] = 30.f + static_cast<float>(r);
  b[3 * kCols + 50] = -41.5f;
  b[5 * kCols + 90] = 12.25f;
  return b;
}

// The int8-like copy: each 32-block rounded to a grid of amax/127.
std::vector<float> int8_like(const std::vector<float>& b) {
  std::vector<float> a(b.size());
  for (size_t k = 0; k < b.size(); k += 32) {
    float amax = 0;
    for (size_t i = k; i < k + 32; ++i) amax = std::max(amax, std::fabs(b[i]));
    const float d = amax / 127;
    for (size_t i = k; i < k + 32; ++i) a[i] = d > 0 ? std::round(b[i] / d) * d : 0;
  }
  return a;
}

struct Plain {
  long double cosine, sqnr_db, rel_l2, max_abs;
  int64_t max_at, beyond;
};

Plain plain_metrics(const std::vector<float>& a, const std::vector<float>& b, double abs_tol, double rel_tol) {
  long double ab = 0, aa = 0, bb = 0, ee = 0;
  Plain p{};
  p.max_at = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    const long double x = a[i], y = b[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
    ee += (x - y) * (x - y);
    const long double d = std::fabs(x - y);
    if (d > p.max_abs || p.max_at < 0) p.max_abs = d, p.max_at = static_cast<int64_t>(i);
    if (d > abs_tol + rel_tol * std::fabs(y)) ++p.beyond;
  }
  p.cosine = ab / std::sqrt(aa * bb);
  p.sqnr_db = 10 * std::log10(bb / ee);
  p.rel_l2 = std::sqrt(ee / bb);
  return p;
}

}  // namespace

TEST(PairedMetrics, FullTensorMetricsMatchAPlainRecomputation) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    const auto b = reference_tensor(seed);
    auto a = int8_like(b);
    a[2 * kCols + 33] += 0.75f;  // one planted error, larger than any rounding step
    const CompareTolerance tol{1e-3, 1e-2};
    const TensorCompare c = compare_host(a.data(), b.data(), static_cast<int64_t>(a.size()), tol);
    const Plain p = plain_metrics(a, b, tol.abs, tol.rel);
    EXPECT_NEAR(c.cosine, static_cast<double>(p.cosine), 1e-12);
    EXPECT_NEAR(c.sqnr_db, static_cast<double>(p.sqnr_db), 1e-9);
    EXPECT_NEAR(c.rel_l2, static_cast<double>(p.rel_l2), 1e-12);
    EXPECT_NEAR(c.max_abs_diff, static_cast<double>(p.max_abs), 1e-12);
    EXPECT_EQ(c.max_abs_at, p.max_at);
    EXPECT_EQ(c.max_abs_at, 2 * kCols + 33);  // the planted error
    EXPECT_EQ(c.n_beyond, p.beyond);
    EXPECT_GT(c.n_beyond, 0);
    EXPECT_LT(c.sqnr_db, 60);  // int8 rounding is visible, not 200
    EXPECT_FALSE(c.identical());
  }
}

TEST(PairedMetrics, IdenticalAndNonFiniteCases) {
  const auto b = reference_tensor(4);
  TensorCompare same = compare_host(b.data(), b.data(), static_cast<int64_t>(b.size()), {});
  EXPECT_TRUE(same.identical());
  EXPECT_EQ(same.sqnr_db, kSqnrCapDb);
  EXPECT_EQ(same.cosine, 1);
  EXPECT_EQ(same.rel_l2, 0);
  EXPECT_EQ(same.n_beyond, 0);

  // NaN in both at the same place is equal; Inf on one side only is a mismatch.
  auto a = b, r = b;
  a[10] = r[10] = NAN;
  EXPECT_TRUE(compare_host(a.data(), r.data(), static_cast<int64_t>(a.size()), {}).identical());
  a[11] = INFINITY;
  const TensorCompare c = compare_host(a.data(), r.data(), static_cast<int64_t>(a.size()), {});
  EXPECT_EQ(c.nonfinite_mismatch, 1);
  EXPECT_EQ(c.sqnr_db, -kSqnrCapDb);
  EXPECT_EQ(c.n_beyond, 1);
  EXPECT_FALSE(c.identical());

  // A zero reference against a non-zero tensor: SQNR -200, infinite relative error.
  std::vector<float> z(8, 0.f), one(8, 1.f);
  const TensorCompare zc = compare_host(one.data(), z.data(), 8, {});
  EXPECT_EQ(zc.sqnr_db, -kSqnrCapDb);
  EXPECT_TRUE(std::isinf(zc.rel_l2));
  EXPECT_EQ(zc.cosine, 0);
}

TEST(PairedMetrics, OutliersAreTheLargestMagnitudesByIndexOnTies) {
  auto x = reference_tensor(5);
  x[40] = -30.f;  // ties the row-0 massive channel (index 7): the lower index comes first
  x[41] = NAN;    // never an outlier
  const auto ref = int8_like(x);
  const auto got = outliers_host(x.data(), static_cast<int64_t>(x.size()), 8, ref.data());
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
    if (!std::isnan(x[static_cast<size_t>(i)])) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) {
    return std::fabs(x[static_cast<size_t>(i)]) > std::fabs(x[static_cast<size_t>(j)]);
  });
  ASSERT_EQ(got.size(), 8u);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].index, idx[k]) << k;
    EXPECT_EQ(got[k].value, x[static_cast<size_t>(idx[k])]);
    EXPECT_EQ(got[k].ref_value, ref[static_cast<size_t>(idx[k])]);
  }
  EXPECT_EQ(got[0].index, 3 * kCols + 50);  // -41.5
  EXPECT_EQ(outliers_host(x.data(), 3, 8, nullptr).size(), 3u);  // fewer elements than k
}

TEST(PairedMetrics, BlockScalesMatchAPlainRecomputation) {
  const auto x = reference_tensor(6);
  for (int block : {32, 256, 40}) {  // 40 does not divide 96: a short last block per row
    const BlockScales s = block_scales_host(x.data(), kRows, kCols, block);
    std::vector<double> d;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; c += block) {
        double amax = 0;
        for (int64_t k = c; k < std::min<int64_t>(kCols, c + block); ++k)
          amax = std::max(amax, static_cast<double>(std::fabs(x[static_cast<size_t>(r * kCols + k)])));
        d.push_back(amax / 127);
      }
    EXPECT_EQ(s.blocks, static_cast<int64_t>(d.size()));
    EXPECT_EQ(s.block_size, block);
    EXPECT_DOUBLE_EQ(s.min, *std::min_element(d.begin(), d.end()));
    EXPECT_DOUBLE_EQ(s.max, *std::max_element(d.begin(), d.end()));
    EXPECT_NEAR(s.mean, std::accumulate(d.begin(), d.end(), 0.0) / static_cast<double>(d.size()), 1e-12);
  }
}

// NodeOutput's defaults (what a backend without its own implementation uses) copy to host and
// agree with the host functions.
TEST(PairedMetrics, NodeOutputDefaultsAgreeWithTheHostFunctions) {
  const auto b = reference_tensor(7), a = int8_like(b);
  synth::HostOutput oa(a, kRows, kCols), ob(b, kRows, kCols);
  const TensorCompare c = oa.compare_to(ob, {});
  const Plain p = plain_metrics(a, b, 1e-3, 1e-2);
  EXPECT_NEAR(c.sqnr_db, static_cast<double>(p.sqnr_db), 1e-9);
  EXPECT_EQ(c.max_abs_at, p.max_at);
  const auto o = oa.outliers(4, &ob);
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o[0].ref_value, b[static_cast<size_t>(o[0].index)]);
  EXPECT_EQ(oa.block_scales(kCols, 32).blocks, kRows * kCols / 32);
  synth::HostOutput small(std::vector<float>(5, 1.f), 1, 5);
  EXPECT_THROW(oa.compare_to(small, {}), Error);
}

TEST(PairedMetrics, KlAndMarginsMatchAPlainRecomputation) {
  std::mt19937_64 rng(9);
  std::normal_distribution<float> nd(0.f, 3.f);
  const int64_t n = 5000;
  std::vector<float> a(static_cast<size_t>(n)), b(a.size());
  for (auto& x : a) x = nd(rng);
  for (size_t i = 0; i < a.size(); ++i) b[i] = a[i] + 0.3f * nd(rng) / 3.f;
  a[17] = 14.f;  // a clear top-1 in A
  b[17] = 12.f;
  b[99] = 12.5f;  // B prefers another token

  // Plain softmax in long double: p = exp(x) / sum exp(x) (the logits are small enough).
  auto softmax = [](const std::vector<float>& x) {
    long double z = 0;
    for (float v : x) z += std::exp(static_cast<long double>(v));
    std::vector<long double> p;
    for (float v : x) p.push_back(std::exp(static_cast<long double>(v)) / z);
    return p;
  };
  const auto pa = softmax(a), pb = softmax(b);
  long double kl = 0;
  for (size_t i = 0; i < pa.size(); ++i) kl += pa[i] * std::log(pa[i] / pb[i]);
  auto top2 = [](const std::vector<long double>& p) {
    std::vector<size_t> i(p.size());
    std::iota(i.begin(), i.end(), 0);
    std::partial_sort(i.begin(), i.begin() + 2, i.end(), [&](size_t x, size_t y) { return p[x] > p[y]; });
    return std::pair{i[0], i[1]};
  };
  const auto [a1, a2] = top2(pa);
  const auto [b1, b2] = top2(pb);

  const trace::LogitsCompare c = compare_logits(a.data(), b.data(), n);
  EXPECT_NEAR(c.kl, static_cast<double>(kl), 1e-9);
  EXPECT_GT(c.kl, 0);
  EXPECT_EQ(c.top1_a, static_cast<int32_t>(a1));
  EXPECT_EQ(c.top1_b, static_cast<int32_t>(b1));
  EXPECT_EQ(c.top1_a, 17);
  EXPECT_EQ(c.top1_b, 99);
  EXPECT_NEAR(c.margin_a, static_cast<double>(pa[a1] - pa[a2]), 1e-12);
  EXPECT_NEAR(c.margin_b, static_cast<double>(pb[b1] - pb[b2]), 1e-12);

  // KL(A||A) = 0 exactly; a non-finite B logit where A has mass: infinite.
  EXPECT_EQ(compare_logits(a.data(), a.data(), n).kl, 0);
  b[5] = NAN;
  EXPECT_TRUE(std::isinf(compare_logits(a.data(), b.data(), n).kl));
}
