// The paired trace's full-tensor metrics on the device (engine/probes/cuda/tensor_compare.cu) against
// compare_host on the same tensors: random pairs at the int8-rounding level of difference, with a
// planted large error, ties of the largest |a - b| across CTAs (the lower index wins), NaN and
// Inf on one or both sides, a zero reference, identical tensors, a 1 x 151936 logits row (more
// elements than kMaxCompareCtas CTAs take in one sweep), one element; and the gather of a
// reference's values at given indices, alone and in a comparison's wait.
// Tolerances: counts, max_abs_diff and max_abs_at exactly equal (no sums involved); cosine,
// rel_l2 within 1e-12 relative and sqnr_db within 1e-9 dB (double sums in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "probes/cuda/tensor_compare.h"
#include "probes/tensor_compare.h"

using namespace minfer;
using minfer::testing::random_floats;
using minfer::testing::to_device;

namespace {

struct Pair {
  std::string name;
  std::vector<float> a, b;
};

// b, and a = b with a small error per element (about what int8 activations leave).
Pair near(std::string name, size_t n, uint32_t seed, float scale) {
  Pair p{std::move(name), {}, random_floats(n, seed, scale)};
  const std::vector<float> e = random_floats(n, seed + 1000, 1e-2f * scale);
  p.a.resize(n);
  for (size_t i = 0; i < n; ++i) p.a[i] = p.b[i] + e[i];
  return p;
}

std::vector<Pair> pairs() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<Pair> ps;
  ps.push_back(near("decode row 896", 896, 1, 1.0f));
  ps.push_back(near("prefill 17x4864", 17 * 4864, 2, 0.7f));
  ps.push_back(near("logits 1x151936", 151936, 3, 3.0f));
  {
    Pair p = near("planted error", 9 * 896, 4, 1.0f);
    p.a[2 * 896 + 33] += 0.75f;
    ps.push_back(std::move(p));
  }
  {  // equal largest |a - b| far apart (in different CTAs, and in one thread's later sweep)
    Pair p = near("ties", 200000, 5, 1.0f);
    for (size_t i : {190001u, 70000u, 300u, 131073u}) p.b[i] = 1.0f, p.a[i] = 6.0f;  // |a - b| exactly 5
    ps.push_back(std::move(p));
  }
  {
    Pair p = near("non-finite", 5000, 6, 1.0f);
    p.a[10] = p.b[10] = nan;       // same on both sides: equal, no part in the sums
    p.a[11] = p.b[11] = inf;       // same
    p.a[12] = inf;                 // one side only: a mismatch
    p.b[13] = -inf;                // one side only
    p.a[14] = nan, p.b[14] = inf;  // NaN against Inf: a mismatch
    p.a[15] = inf, p.b[15] = -inf;  // +Inf against -Inf: a mismatch
    ps.push_back(std::move(p));
  }
  {
    Pair p{"zero reference", std::vector<float>(300, 1.0f), std::vector<float>(300, 0.0f)};
    ps.push_back(std::move(p));
  }
  {
    Pair p{"both zero", std::vector<float>(300, 0.0f), std::vector<float>(300, 0.0f)};
    ps.push_back(std::move(p));
  }
  {
    Pair p = near("identical", 4096, 7, 2.0f);
    p.a = p.b;
    ps.push_back(std::move(p));
  }
  {
    Pair p{"all nan", std::vector<float>(40, nan), std::vector<float>(40, nan)};
    ps.push_back(std::move(p));
  }
  ps.push_back(near("one element", 1, 8, 1.0f));
  return ps;
}

void expect_rel(double got, double want, double rel, const std::string& what) {
  if (std::isinf(want) || std::isnan(want)) {
    EXPECT_TRUE((std::isnan(want) && std::isnan(got)) || got == want) << what << ": got " << got << ", want " << want;
    return;
  }
  EXPECT_LE(std::fabs(got - want), rel * std::max(1.0, std::fabs(want))) << what << ": got " << got << ", want " << want;
}

}  // namespace

TEST(CudaTensorCompare, MatchesCompareHost) {
  MINFER_REQUIRE_GPU();
  cuda::DeviceComparer cmp;
  for (const CompareTolerance tol : {CompareTolerance{}, CompareTolerance{0, 0}, CompareTolerance{1e-2, 0.1}}) {
    for (const Pair& p : pairs()) {
      const std::string what = p.name + " (tol " + std::to_string(tol.abs) + ", " + std::to_string(tol.rel) + ")";
      const auto da = to_device(p.a), db = to_device(p.b);
      const int64_t n = static_cast<int64_t>(p.a.size());
      const TensorCompare want = compare_host(p.a.data(), p.b.data(), n, tol);
      // Twice: the same bits both times (a fixed reduction order).
      const TensorCompare got = cmp.compare(da.as<float>(), db.as<float>(), n, tol, nullptr);
      const TensorCompare again = cmp.compare(da.as<float>(), db.as<float>(), n, tol, nullptr);
      EXPECT_EQ(got.n_beyond, want.n_beyond) << what;
      EXPECT_EQ(got.nonfinite_mismatch, want.nonfinite_mismatch) << what;
      EXPECT_EQ(got.max_abs_at, want.max_abs_at) << what;
      EXPECT_EQ(got.max_abs_diff, want.max_abs_diff) << what;
      EXPECT_EQ(got.identical(), want.identical()) << what;
      expect_rel(got.cosine, want.cosine, 1e-12, what + " cosine");
      expect_rel(got.rel_l2, want.rel_l2, 1e-12, what + " rel_l2");
      expect_rel(got.sqnr_db, want.sqnr_db, 1e-9, what + " sqnr_db");
      EXPECT_EQ(got.cosine, again.cosine) << what;
      EXPECT_EQ(got.sqnr_db, again.sqnr_db) << what;
      EXPECT_EQ(got.rel_l2, again.rel_l2) << what;
    }
  }
}

TEST(CudaTensorCompare, PlantedErrorAndTiesAreFound) {
  MINFER_REQUIRE_GPU();
  cuda::DeviceComparer cmp;
  for (const Pair& p : pairs()) {
    const auto da = to_device(p.a), db = to_device(p.b);
    const TensorCompare c = cmp.compare(da.as<float>(), db.as<float>(), static_cast<int64_t>(p.a.size()), {}, nullptr);
    if (p.name == "planted error") {
      EXPECT_EQ(c.max_abs_at, 2 * 896 + 33);
    }
    if (p.name == "ties") {
      EXPECT_EQ(c.max_abs_at, 300);
    }
    if (p.name == "identical" || p.name == "all nan" || p.name == "both zero") {
      EXPECT_TRUE(c.identical()) << p.name;
      EXPECT_EQ(c.sqnr_db, kSqnrCapDb) << p.name;
      EXPECT_EQ(c.cosine, 1) << p.name;
    }
    if (p.name == "non-finite") {
      EXPECT_EQ(c.nonfinite_mismatch, 4);
    }
    if (p.name == "zero reference") {
      EXPECT_EQ(c.sqnr_db, -kSqnrCapDb);
    }
  }
}

TEST(CudaTensorCompare, GatherReadsTheReferenceAtTheIndices) {
  MINFER_REQUIRE_GPU();
  cuda::DeviceComparer cmp;
  const std::vector<float> x = random_floats(151936, 11, 3.0f);
  const auto dx = to_device(x);
  const std::vector<int64_t> idx = {0, 151935, 7, 7, 100000, 4096, 1, 2};
  const std::vector<float> got = cmp.gather(dx.as<float>(), idx, nullptr);
  ASSERT_EQ(got.size(), idx.size());
  for (size_t i = 0; i < idx.size(); ++i) EXPECT_EQ(got[i], x[static_cast<size_t>(idx[i])]) << "index " << idx[i];
  EXPECT_TRUE(cmp.gather(dx.as<float>(), {}, nullptr).empty());
  // In a comparison's own wait: the metrics as without it, and the reference's values.
  const std::vector<float> a = random_floats(x.size(), 12, 3.0f);
  const auto da = to_device(a);
  std::vector<float> with;
  const TensorCompare c1 = cmp.compare(da.as<float>(), dx.as<float>(), static_cast<int64_t>(x.size()), {}, nullptr, idx, &with);
  const TensorCompare c2 = cmp.compare(da.as<float>(), dx.as<float>(), static_cast<int64_t>(x.size()), {}, nullptr);
  EXPECT_EQ(c1.sqnr_db, c2.sqnr_db);
  EXPECT_EQ(c1.max_abs_at, c2.max_abs_at);
  ASSERT_EQ(with.size(), idx.size());
  for (size_t i = 0; i < idx.size(); ++i) EXPECT_EQ(with[i], x[static_cast<size_t>(idx[i])]) << "index " << idx[i];
}
