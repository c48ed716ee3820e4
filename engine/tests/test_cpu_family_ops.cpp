// The CPU ops qwen3 and llama add, against plain double references on random inputs: per-head
// RMSNorm (qwen3's Q/K norm), "normal" (adjacent-pair) RoPE, and RoPE with frequency divisors
// (rope_freqs.weight) in both pairings.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/ops.h"

using namespace minfer;

namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Rotates the pair (a, b) of every head by pos * base^(-2i/d) / divisor[i]; adjacent: (2i, 2i+1),
// else NeoX (i, i + d/2).
std::vector<double> rope_reference(const std::vector<float>& x, const std::vector<int32_t>& pos, int64_t n_heads,
                                   int64_t hd, double base, const float* divisors, bool adjacent) {
  std::vector<double> y(x.begin(), x.end());
  const int64_t rows = static_cast<int64_t>(pos.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < n_heads; ++h)
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double theta = pos[r] * std::pow(base, -2.0 * i / hd) / (divisors ? divisors[i] : 1.0);
        const int64_t a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + hd / 2;
        const size_t o = static_cast<size_t>((r * n_heads + h) * hd);
        const double x0 = x[o + a], x1 = x[o + b];
        y[o + a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        y[o + b] = x0 * std::sin(theta) + x1 * std::cos(theta);
      }
  return y;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

}  // namespace

TEST(CpuFamilyOps, HeadRmsNormNormalizesEachHeadWithTheSharedWeight) {
  const int64_t rows = 5, n_heads = 3, hd = 128;
  auto x = random_values(static_cast<size_t>(rows * n_heads * hd), 1);
  x[7] = 30.0f;  // an outlier only changes its own head's scale
  const auto w = random_values(static_cast<size_t>(hd), 2, 0.5f, 1.5f);
  std::vector<float> y(x.size());
  ThreadPool pool(3);
  cpu::head_rms_norm(x.data(), w.data(), y.data(), rows, n_heads, hd, 1e-6f, pool);
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < rows * n_heads; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < hd; ++i) ss += double(x[static_cast<size_t>(r * hd + i)]) * x[static_cast<size_t>(r * hd + i)];
    const double s = 1.0 / std::sqrt(ss / hd + 1e-6);
    for (int64_t i = 0; i < hd; ++i) want[static_cast<size_t>(r * hd + i)] = x[static_cast<size_t>(r * hd + i)] * s * w[static_cast<size_t>(i)];
  }
  expect_close(y, want, 1e-5, "head_rms_norm");
}

TEST(CpuFamilyOps, RopeNormalRotatesAdjacentPairs) {
  const int64_t n_heads = 4, hd = 64;
  const std::vector<int32_t> pos = {0, 1, 7, 300, 8191};
  const auto x = random_values(pos.size() * static_cast<size_t>(n_heads * hd), 3);
  std::vector<float> y(x.size());
  ThreadPool pool(2);
  cpu::rope_normal(x.data(), pos.data(), y.data(), static_cast<int64_t>(pos.size()), n_heads, hd, 500000.0, pool);
  expect_close(y, rope_reference(x, pos, n_heads, hd, 500000.0, nullptr, true), 2e-5, "rope_normal");
  // Position 0 is the identity; the NeoX pairing gives a different result elsewhere.
  for (int64_t i = 0; i < n_heads * hd; ++i) EXPECT_EQ(y[static_cast<size_t>(i)], x[static_cast<size_t>(i)]);
  std::vector<float> neox(x.size());
  cpu::rope_neox(x.data(), pos.data(), neox.data(), static_cast<int64_t>(pos.size()), n_heads, hd, 500000.0, pool);
  EXPECT_NE(neox, y);
}

TEST(CpuFamilyOps, RopeFrequencyDivisorsInBothPairings) {
  const int64_t n_heads = 2, hd = 32;
  const std::vector<int32_t> pos = {3, 1000, 40000};
  const auto x = random_values(pos.size() * static_cast<size_t>(n_heads * hd), 4);
  // Llama 3.1-style divisors: 1 for the fast frequencies, up to 32 for the slow ones.
  std::vector<float> divisors(static_cast<size_t>(hd / 2));
  for (size_t i = 0; i < divisors.size(); ++i) divisors[i] = i < 4 ? 1.0f : i < 10 ? 1.0f + 3.1f * float(i - 3) : 32.0f;
  ThreadPool pool(2);
  std::vector<float> y(x.size());
  cpu::rope_normal(x.data(), pos.data(), y.data(), 3, n_heads, hd, 500000.0, pool, divisors.data());
  expect_close(y, rope_reference(x, pos, n_heads, hd, 500000.0, divisors.data(), true), 2e-5, "rope_normal + divisors");
  cpu::rope_neox(x.data(), pos.data(), y.data(), 3, n_heads, hd, 500000.0, pool, divisors.data());
  expect_close(y, rope_reference(x, pos, n_heads, hd, 500000.0, divisors.data(), false), 2e-5, "rope_neox + divisors");
  // Divisors of 1 change nothing.
  const std::vector<float> ones(static_cast<size_t>(hd / 2), 1.0f);
  std::vector<float> plain(x.size()), with_ones(x.size());
  cpu::rope_neox(x.data(), pos.data(), plain.data(), 3, n_heads, hd, 1e6, pool);
  cpu::rope_neox(x.data(), pos.data(), with_ones.data(), 3, n_heads, hd, 1e6, pool, ones.data());
  EXPECT_EQ(plain, with_ones);
}
