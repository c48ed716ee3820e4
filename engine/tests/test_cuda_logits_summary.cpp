// The device logits summary (engine/cuda/logits_summary.cu) against summarize_logits (the host
// rule) on the same rows: random logits of vocabulary size and odd sizes, planted NaN and ±Inf,
// ties across tile boundaries, -0 against +0, a row with fewer finite logits than k, an all-NaN
// row, and chosen tokens at the top, in the middle and on a tie. Both host slots are used.
// Tolerances: ids, logits, non-finite count and the chosen rank exactly equal; probabilities,
// the chosen probability and the entropy within 1e-12 relative (double sums in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda/logits_summary.h"
#include "exec/logits_summary.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::random_floats;
using minfer::testing::to_device;

namespace {

void expect_rel(double got, double want, double rel, const char* what, size_t index = 0) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " " << index;
    return;
  }
  EXPECT_LE(std::fabs(got - want), rel * std::max(std::fabs(want), 1e-300)) << what << " " << index << ": " << got << " vs " << want;
}

void check(const std::string& name, const std::vector<float>& row, int k, int32_t chosen, int slot) {
  SCOPED_TRACE(name);
  const int64_t n = static_cast<int64_t>(row.size());
  const LogitsSummary want = summarize_logits(row.data(), n, chosen, k);
  cuda::DeviceBuffer x = to_device(row);
  cuda::DeviceBuffer c = to_device(std::vector<int32_t>{chosen});
  cuda::DeviceLogitsSummary dev(n, k);
  dev.enqueue(x.as<float>(), c.as<int32_t>(), nullptr);
  dev.copy_to_host(nullptr, slot);
  const LogitsSummary got = dev.read(slot);
  EXPECT_EQ(got.n_vocab, want.n_vocab);
  EXPECT_EQ(got.nonfinite, want.nonfinite);
  ASSERT_EQ(got.top.size(), want.top.size());
  for (size_t i = 0; i < want.top.size(); ++i) {
    EXPECT_EQ(got.top[i].id, want.top[i].id) << "top " << i;
    EXPECT_EQ(std::isnan(got.top[i].logit), std::isnan(want.top[i].logit)) << "top " << i;
    if (!std::isnan(want.top[i].logit)) {
      EXPECT_EQ(got.top[i].logit, want.top[i].logit) << "top " << i;
    }
    expect_rel(got.top[i].p, want.top[i].p, 1e-12, "p of top", i);
  }
  expect_rel(got.entropy, want.entropy, 1e-12, "entropy");
  EXPECT_EQ(got.chosen, want.chosen);
  EXPECT_EQ(got.chosen_rank, want.chosen_rank);
  expect_rel(got.chosen_p, want.chosen_p, 1e-12, "chosen p");
}

TEST(CudaLogitsSummary, MatchesTheHostRule) {
  MINFER_REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();

  std::vector<float> vocab = random_floats(151936, 11, 3.0f);
  check("vocabulary row, chosen = best", vocab, 20, static_cast<int32_t>(std::max_element(vocab.begin(), vocab.end()) - vocab.begin()), 0);
  check("vocabulary row, chosen in the middle, k = 64", vocab, 64, 70001, 1);

  std::vector<float> planted = random_floats(151936, 12, 2.0f);
  planted[5] = nan;
  planted[6000] = inf;
  planted[6001] = -inf;
  planted[151935] = nan;
  // A tie at the top across tiles (2048 logits per tile): the lower id comes first.
  planted[4097] = 40.0f;
  planted[100] = 40.0f;
  planted[150000] = 40.0f;
  planted[77] = -0.0f;
  planted[78] = 0.0f;
  check("planted nan/inf and a 3-way tie", planted, 20, 150000, 0);
  check("chosen is -0 (ties +0 at a higher id)", planted, 5, 77, 1);
  check("chosen is NaN", planted, 5, 5, 0);

  std::vector<float> few = random_floats(1000, 13, 1.0f);
  for (size_t i = 0; i < few.size(); ++i)
    if (i % 7) few[i] = i % 2 ? nan : -inf;  // ~143 finite logits
  check("fewer finite logits than k", few, 64, 3, 1);
  std::vector<float> small = random_floats(37, 14, 1.0f);
  check("n = 37, k = 37", small, 37, 36, 0);
  check("one logit", std::vector<float>{0.25f}, 1, 0, 1);
  check("all NaN", std::vector<float>(5000, nan), 10, 0, 0);
  std::vector<float> odd = random_floats(4097, 15, 0.5f);
  check("n = 4097, chosen out of the row", odd, 8, -1, 1);
}

TEST(CudaLogitsSummary, RejectsBadSizes) {
  MINFER_REQUIRE_GPU();
  EXPECT_THROW(cuda::DeviceLogitsSummary(0, 1), Error);
  EXPECT_THROW(cuda::DeviceLogitsSummary(100, 0), Error);
  EXPECT_THROW(cuda::DeviceLogitsSummary(100, 65), Error);
  EXPECT_THROW(cuda::DeviceLogitsSummary(10, 11), Error);
}

}  // namespace
