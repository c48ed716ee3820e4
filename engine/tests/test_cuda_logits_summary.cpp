// The device logits summary (engine/probes/cuda/logits_summary.cu) against summarize_logits (the host
// rule) on the same rows: random logits of vocabulary size and odd sizes, planted NaN and ±Inf,
// ties across tile boundaries, -0 against +0, a row with fewer finite logits than k, an all-NaN
// row, and chosen tokens at the top, in the middle and on a tie; then rows aimed at the selection
// (SelectionEdgeCases: ties everywhere, the top k inside one tile, tiles without a finite logit,
// k = n, random shapes). Both host slots are used.
// Tolerances: ids, logits, non-finite count and the chosen rank exactly equal; probabilities,
// the chosen probability and the entropy within 1e-12 relative (double sums in another order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "probes/cuda/logits_summary.h"
#include "probes/logits_summary.h"

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

// Rows a selection (rather than a sort) could get wrong: every key tied on value, the top k all
// in one tile of the kernel (2048 logits) or in the last, partial one, whole tiles without a
// finite logit, k = n, and random shapes. Entropies stay well above 0: the host's sequential
// double sum over ~150k terms is itself off by up to ~1e-12 relative on a row dominated by one
// logit (the device's per-tile sums are closer to exact), which the 1e-12 tolerance cannot absorb.
TEST(CudaLogitsSummary, SelectionEdgeCases) {
  MINFER_REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();

  check("every logit equal, k = 64", std::vector<float>(10000, random_floats(1, 16, 4.0f)[0]), 64, 5000, 0);
  std::vector<float> zeros(3000, 0.0f);
  for (size_t i = 0; i < zeros.size(); i += 3) zeros[i] = -0.0f;
  check("+0 and -0 only", zeros, 64, 1500, 1);

  // Values above the row's max at every 5th logit of one tile, quantized to quarters (ties).
  std::vector<float> one_tile = random_floats(151936, 17, 1.0f);
  const float max1 = *std::max_element(one_tile.begin(), one_tile.end());
  const std::vector<float> lift = random_floats(300, 18, 1.0f);
  for (int i = 0; i < 300; ++i) one_tile[98304 + 5 * i] = max1 + 1.0f + std::round(std::fabs(lift[i]) * 4.0f) / 4.0f;
  check("the top 64 in one tile (with ties)", one_tile, 64, 98304 + 5 * 17, 0);
  std::vector<float> last_tile = random_floats(151936, 19, 1.0f);
  const float max2 = *std::max_element(last_tile.begin(), last_tile.end());
  for (int i = 0; i < 300; ++i) last_tile[151936 - 300 + i] = max2 + 1.0f + std::fabs(lift[i]);
  check("the top 64 in the last (partial) tile", last_tile, 64, 151935, 1);
  check("the top 20 in the last (partial) tile, chosen below them", last_tile, 20, 3, 0);

  std::vector<float> dead = random_floats(20000, 20, 1.5f);
  for (int i = 0; i < 3 * 2048 + 100; ++i) dead[i] = i % 3 == 0 ? nan : (i % 3 == 1 ? inf : -inf);
  check("the first tiles without a finite logit", dead, 64, 6000, 1);
  check("chosen is +Inf", dead, 12, 1, 0);
  std::vector<float> no_finite = random_floats(3000, 21, 1.0f);
  for (float& v : no_finite) v = v < -0.5f ? nan : (v > 0.0f ? inf : -inf);
  check("NaN and +-Inf only", no_finite, 16, 2999, 1);
  check("n = k = 64", random_floats(64, 22, 1.0f), 64, 10, 0);
  check("n = 6001, k = 64, chosen = n", random_floats(6001, 23, 1.0f), 64, 6001, 1);
  std::vector<float> huge = random_floats(50000, 24, 1.0f);
  for (size_t i = 0; i < huge.size(); i += 2048 * 3 + 11) huge[i] *= 1e30f;
  check("huge logits in some tiles", huge, 33, 2048 * 3 + 11, 0);

  // Uniform logits (no single one dominates), with NaN/Inf and rounded (tied) values planted.
  std::mt19937 rng(25);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 20000);
    const int k = 1 + static_cast<int>(rng() % std::min<int64_t>(64, n));
    std::vector<float> row(static_cast<size_t>(n));
    for (float& v : row) {
      const uint32_t what = rng() % 100;
      v = what < 3 ? nan : what < 5 ? inf : what < 7 ? -inf : what < 30 ? std::round(u(rng)) : u(rng);
    }
    const int32_t chosen = static_cast<int32_t>(rng() % static_cast<uint32_t>(n + 2)) - 1;  // -1 and n: outside the row
    check("random shape " + std::to_string(trial) + ": n = " + std::to_string(n) + ", k = " + std::to_string(k), row, k, chosen, trial % 2);
  }
}

TEST(CudaLogitsSummary, RejectsBadSizes) {
  MINFER_REQUIRE_GPU();
  EXPECT_THROW(cuda::DeviceLogitsSummary(0, 1), Error);
  EXPECT_THROW(cuda::DeviceLogitsSummary(100, 0), Error);
  EXPECT_THROW(cuda::DeviceLogitsSummary(100, 65), Error);
  EXPECT_THROW(cuda::DeviceLogitsSummary(10, 11), Error);
}

}  // namespace
