// Quantize -> dequantize error bounds per type on random data. Blocks get random magnitudes
// (1e-3..1e2), some are all-positive (offset) and one is all zero, so scales of every size,
// the min/offset paths and the zero block are exercised.
//
// Bounds, per element, from each block's own statistics (amax = max |x|, range = max - min):
//   F32 exact; F16 |err| <= max(2^-11 |x|, 2^-25) (subnormals); BF16 |err| <= 2^-8 |x|;
//   Q4_0 <= amax/8 (one step: the end opposite the scale's sign clips by up to a step),
//   Q5_0 <= amax/16, Q8_0 <= amax/254 + amax/1024 (half a step + f16 rounding of d),
//   Q4_1 <= range/30 + (range + |min|)/1024, Q5_1 <= range/62 + (range + |min|)/1024,
//   Q8_1 as Q8_0, Q8_K <= amax/254 (f32 scale, but one scale per 256 elements);
//   Q4_K <= range/15 + amax/64, Q5_K <= range/31 + amax/64 over the 256-element super-block
//     (half a step, plus the 6-bit rounding of the sub-block scale and min),
//   Q6_K <= amax/16 over the super-block (the least-squares sub-block scale may clip the
//     sub-block's extreme by up to a step, as may the end opposite the scale's sign).
//   all with 1% slack for float rounding. Additionally the RMS error relative to the data's
//   RMS stays under a per-type budget (4-bit 0.12, 5-bit 0.06, 6-bit 0.03, 8-bit 0.006,
//   Q8_K 0.008).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "quant/quant.h"

using namespace minfer;

namespace {

std::vector<float> make_data(int64_t n, int block, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(-3.0f, 2.0f), u(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / block; ++b) {
    const float scale = std::pow(10.0f, mag(rng));
    const bool positive = u(rng) < 0.2f;
    const bool zero = b == 3;
    for (int j = 0; j < block; ++j) {
      float v = nd(rng) * scale;
      if (positive) v = std::fabs(v) + scale;
      x[b * block + j] = zero ? 0.0f : v;
    }
  }
  return x;
}

struct Budget {
  WeightType type;
  int stat_block;  // elements the bound's statistics are taken over
  double (*bound)(double amax, double range, double mn, float x);
  double rel_rms;
};

const Budget kBudgets[] = {
    {WeightType::F32, 1, [](double, double, double, float) { return 0.0; }, 0.0},
    {WeightType::F16, 1, [](double, double, double, float x) { return std::max(std::fabs(x) * 0x1p-11, 0x1p-25); }, 1e-3},
    {WeightType::BF16, 1, [](double, double, double, float x) { return std::fabs(x) * 0x1p-8; }, 5e-3},
    {WeightType::Q4_0, 32, [](double a, double, double, float) { return a / 8; }, 0.12},
    {WeightType::Q5_0, 32, [](double a, double, double, float) { return a / 16; }, 0.06},
    {WeightType::Q8_0, 32, [](double a, double, double, float) { return a / 254 + a / 1024; }, 0.006},
    {WeightType::Q4_1, 32, [](double, double r, double m, float) { return r / 30 + (r + std::fabs(m)) / 1024; }, 0.12},
    {WeightType::Q5_1, 32, [](double, double r, double m, float) { return r / 62 + (r + std::fabs(m)) / 1024; }, 0.06},
    {WeightType::Q8_1, 32, [](double a, double, double, float) { return a / 254 + a / 1024; }, 0.006},
    {WeightType::Q8_K, 256, [](double a, double, double, float) { return a / 254; }, 0.008},
    {WeightType::Q4_K, 256, [](double a, double r, double, float) { return r / 15 + a / 64; }, 0.12},
    {WeightType::Q5_K, 256, [](double a, double r, double, float) { return r / 31 + a / 64; }, 0.06},
    {WeightType::Q6_K, 256, [](double a, double, double, float) { return a / 16; }, 0.03},
};

class RoundTrip : public ::testing::TestWithParam<Budget> {};

TEST_P(RoundTrip, ErrorWithinBound) {
  const Budget& bd = GetParam();
  const int64_t n = 256 * 24;
  const int data_block = std::max(bd.stat_block, 32);
  const auto x = make_data(n, data_block, 1234 + static_cast<uint32_t>(bd.type));
  std::vector<uint8_t> q(row_bytes(bd.type, n));
  quantize_row(bd.type, x.data(), q.data(), n);
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(bd.type, q.data(), y.data(), n);

  double err2 = 0, sig2 = 0, worst_ratio = 0;
  for (int64_t b0 = 0; b0 < n; b0 += bd.stat_block) {
    double amax = 0, lo = x[b0], hi = x[b0];
    for (int j = 0; j < bd.stat_block; ++j) {
      const double v = x[b0 + j];
      amax = std::max(amax, std::fabs(v));
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    for (int j = 0; j < bd.stat_block; ++j) {
      const int64_t i = b0 + j;
      const double e = std::fabs(double(y[i]) - x[i]);
      const double bound = bd.bound(amax, hi - lo, lo, x[i]) * 1.01;
      ASSERT_LE(e, bound) << name(bd.type) << " element " << i << " x=" << x[i] << " y=" << y[i];
      if (bound > 0) worst_ratio = std::max(worst_ratio, e / bound);
      err2 += e * e;
      sig2 += double(x[i]) * x[i];
    }
  }
  const double rel = std::sqrt(err2 / sig2);
  EXPECT_LE(rel, bd.rel_rms) << name(bd.type);
  if (bd.type == WeightType::F32) {
    EXPECT_EQ(err2, 0.0);
  }
  // The all-zero block comes back as zeros.
  for (int j = 0; j < data_block; ++j) EXPECT_EQ(y[3 * data_block + j], 0.0f);
  RecordProperty("rel_rms", std::to_string(rel));
  std::printf("%-5s rel rms error %.5f, worst error / bound %.3f\n", name(bd.type), rel, worst_ratio);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, RoundTrip, ::testing::ValuesIn(kBudgets),
                         [](const auto& info) { return std::string(name(info.param.type)); });

// Quantizing dequantized data again changes nothing for the fixed-grid types (a stable point).
TEST(RoundTrip, RequantizingIsStableForLegacyTypes) {
  for (WeightType t : {WeightType::Q4_0, WeightType::Q5_0, WeightType::Q8_0}) {
    const int64_t n = 32 * 40;
    const auto x = make_data(n, 32, 99);
    std::vector<uint8_t> q1(row_bytes(t, n)), q2(row_bytes(t, n));
    std::vector<float> y(static_cast<size_t>(n)), y2(static_cast<size_t>(n));
    quantize_row(t, x.data(), q1.data(), n);
    dequantize_row(t, q1.data(), y.data(), n);
    quantize_row(t, y.data(), q2.data(), n);
    dequantize_row(t, q2.data(), y2.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y2[i], y[i], std::fabs(y[i]) * 2e-3 + 1e-12) << name(t) << " " << i;
  }
}

}  // namespace
