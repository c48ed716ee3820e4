// vec_dot of every weight type against its activation format, on both the scalar and (where
// built) the SIMD path, versus dequantize + a float64 dot of the same quantized data.
// The dots do exact integer sums inside blocks, so the only differences are float rounding of
// per-block partial sums (tolerance 1e-5 of sum |w x|) and, for Q4_1/Q5_1, Q8_1's stored
// s = f16(d * sum q), which carries f16 rounding by design (tolerance 2^-10 of sum |m s|).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/vec_dot_paths.h"

using namespace minfer;

namespace {

const WeightType kWeightTypes[] = {WeightType::F32,  WeightType::F16,  WeightType::BF16,
                                   WeightType::Q4_0, WeightType::Q4_1, WeightType::Q5_0,
                                   WeightType::Q5_1, WeightType::Q8_0, WeightType::Q4_K,
                                   WeightType::Q5_K, WeightType::Q6_K};

std::vector<float> random_row(int64_t n, uint32_t seed, float offset) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(offset, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = nd(rng);
  x[static_cast<size_t>(n / 3)] = 9.0f;  // an outlier, as real activations have
  return x;
}

std::vector<uint8_t> quantize(WeightType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(t, static_cast<int64_t>(x.size())));
  quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}
std::vector<float> dequantize(WeightType t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

// Extra tolerance for Q8_1's f16-rounded block sums s, weighted by the weight blocks' m.
template <class Block>
double offset_slack(const std::vector<uint8_t>& w, const std::vector<uint8_t>& a, int64_t n) {
  const auto* wb = reinterpret_cast<const Block*>(w.data());
  const auto* ab = reinterpret_cast<const BlockQ8_1*>(a.data());
  double s = 0;
  for (int64_t i = 0; i < n / 32; ++i) s += std::fabs(fp16_to_f32(wb[i].m) * fp16_to_f32(ab[i].s));
  return s * 0x1p-10;
}

struct Case {
  WeightType type;
  int64_t n;
};

class VecDot : public ::testing::TestWithParam<Case> {};

TEST_P(VecDot, MatchesDequantizedDot) {
  const auto [wt, n] = GetParam();
  const WeightType at = vec_dot_type(wt);
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const auto wf = random_row(n, seed * 17 + static_cast<uint32_t>(wt), seed % 2 ? 0.0f : 0.7f);
    const auto xf = random_row(n, seed * 31 + 5, seed % 3 ? 0.0f : -0.4f);
    const auto w = quantize(wt, wf);
    const auto a = quantize(at, xf);
    const auto wd = dequantize(wt, w, n);
    const auto ad = dequantize(at, a, n);
    double ref = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      ref += double(wd[i]) * ad[i];
      mag += std::fabs(double(wd[i]) * ad[i]);
    }
    double tol = 1e-5 * mag + 1e-9;
    if (wt == WeightType::Q4_1) tol += offset_slack<BlockQ4_1>(w, a, n);
    if (wt == WeightType::Q5_1) tol += offset_slack<BlockQ5_1>(w, a, n);

    const float scalar = vec_dot_path(DotPath::Scalar, wt, n, w.data(), a.data());
    EXPECT_NEAR(scalar, ref, tol) << name(wt) << " scalar, n=" << n << " seed " << seed;
    if (has_simd_vec_dot(wt)) {
      const float simd = vec_dot_path(DotPath::Simd, wt, n, w.data(), a.data());
      EXPECT_NEAR(simd, ref, tol) << name(wt) << " simd (" << simd_dot_isa() << "), n=" << n;
      EXPECT_NEAR(simd, scalar, tol) << name(wt) << " simd vs scalar";
    }
    EXPECT_EQ(vec_dot(wt, n, w.data(), a.data()),
              has_simd_vec_dot(wt) ? vec_dot_path(DotPath::Simd, wt, n, w.data(), a.data()) : scalar);

    // And the quantized dot stays near the unquantized one (sanity of the whole pipeline).
    double exact = 0;
    for (int64_t i = 0; i < n; ++i) exact += double(wf[i]) * xf[i];
    EXPECT_NEAR(scalar, exact, 0.15 * mag + 1e-6) << name(wt);
  }
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (WeightType t : kWeightTypes) {
    const bool k = info(t).block_elems == 256;
    for (int64_t n : k ? std::vector<int64_t>{256, 768, 4864} : std::vector<int64_t>{32, 96, 896, 4864})
      c.push_back({t, n});
    if (info(t).block_elems == 1) c.push_back({t, 37});  // float tails
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, VecDot, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::string(name(info.param.type)) + "_n" + std::to_string(info.param.n);
});

// The four-row kernels (used by matmul_mmq for several tokens) agree with four vec_dot calls.
TEST(VecDot, FourRowKernelsMatchSingleDots) {
  int tested = 0;
  for (WeightType wt : kWeightTypes) {
    const VecDot4Fn dot4 = vec_dot4_fn(wt);
    if (!dot4) continue;
    ++tested;
    const WeightType at = vec_dot_type(wt);
    for (int64_t n : {32, 96, 4864}) {
      const auto w = quantize(wt, random_row(n, 3, 0.2f));
      const size_t a_row = row_bytes(at, n);
      std::vector<uint8_t> acts(4 * a_row);
      for (int t = 0; t < 4; ++t) {
        const auto a = quantize(at, random_row(n, 40 + t, t * 0.3f));
        std::copy(a.begin(), a.end(), acts.begin() + t * a_row);
      }
      float out[4];
      dot4(n, w.data(), acts.data(), a_row, out);
      for (int t = 0; t < 4; ++t) {
        const float one = vec_dot_path(DotPath::Scalar, wt, n, w.data(), acts.data() + t * a_row);
        EXPECT_NEAR(out[t], one, 1e-5 * std::fabs(one) + 1e-4) << name(wt) << " n=" << n << " row " << t;
      }
    }
  }
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  EXPECT_GE(tested, 3);  // Q4_0, Q5_0, Q8_0
#else
  if (tested == 0) GTEST_SKIP() << "no four-row kernels without AVX2";
#endif
}

// The decode GEMV kernels (one activation row, many weight rows; used by matmul_mmq for single
// tokens) agree with the scalar vec_dot of each row: row counts around the kernels' 4-row
// groups, odd and even block counts, quantized rows plus rows of random code bytes (every
// code value, -128 included for Q8_0) with random f16 scales.
TEST(VecDot, GemvKernelsMatchScalarDots) {
  int tested = 0;
  std::mt19937 rng(77);
  for (WeightType wt : kWeightTypes) {
    const GemvKernel k = gemv_kernel(wt);
    if (!k.rows) continue;
    ++tested;
    const WeightType at = vec_dot_type(wt);
    const size_t block_bytes = row_bytes(wt, 32);
    for (int64_t n : {32, 96, 896, 4864})
      for (int64_t rows : {1, 3, 4, 5, 9}) {
        const size_t w_row = row_bytes(wt, n);
        std::vector<uint8_t> w(w_row * static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          uint8_t* dst = w.data() + r * w_row;
          if (r % 2 == 0) {
            const auto q = quantize(wt, random_row(n, 100 + static_cast<uint32_t>(r), 0.1f * r));
            std::copy(q.begin(), q.end(), dst);
          } else {  // raw codes; the block's leading f16 scale kept in a sane range
            for (size_t b = 0; b < w_row; ++b) dst[b] = static_cast<uint8_t>(rng());
            for (size_t b = 0; b < w_row; b += block_bytes) {
              const uint16_t d = f32_to_fp16(std::ldexp(static_cast<float>(rng() % 1000 + 1), -14));
              std::memcpy(dst + b, &d, 2);
            }
          }
        }
        const auto act = quantize(at, random_row(n, 200 + static_cast<uint32_t>(n), -0.2f));
        std::vector<uint8_t> prep(k.prep_bytes(n));
        k.prep(n, act.data(), prep.data());
        std::vector<float> out(static_cast<size_t>(rows), -1.0f);
        k.rows(n, w.data(), w_row, rows, prep.data(), out.data());
        const auto xa = dequantize(at, act, n);
        for (int64_t r = 0; r < rows; ++r) {
          const std::vector<uint8_t> wr(w.begin() + r * w_row, w.begin() + (r + 1) * w_row);
          const auto xw = dequantize(wt, wr, n);
          double mag = 0;
          for (int64_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(xw[i]) * xa[i]);
          const float one = vec_dot_path(DotPath::Scalar, wt, n, wr.data(), act.data());
          EXPECT_NEAR(out[r], one, 1e-5 * mag + 1e-9) << name(wt) << " n=" << n << " rows=" << rows << " row " << r;
        }
      }
  }
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  EXPECT_GE(tested, 2);  // Q4_0, Q8_0
#else
  if (tested == 0) GTEST_SKIP() << "no GEMV kernels without AVX2";
#endif
}

TEST(VecDot, SimdPathsExistWhereRequired) {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  for (WeightType t : {WeightType::Q4_0, WeightType::Q8_0, WeightType::Q5_0, WeightType::Q4_K, WeightType::Q6_K})
    EXPECT_TRUE(has_simd_vec_dot(t)) << name(t);
#else
  GTEST_SKIP() << "built without AVX2/FMA/F16C: only the scalar path exists";
#endif
}

// Extreme codes: all weights and activations at the ends of their ranges, where an int16
// saturation or a sign slip would show.
TEST(VecDot, ExtremeCodes) {
  const int64_t n = 512;
  for (WeightType wt : kWeightTypes) {
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> wf(n), xf(n);
      for (int64_t i = 0; i < n; ++i) {
        wf[i] = (i % 2 ? 1.0f : -1.0f) * 3.0f;
        xf[i] = sign * (i % 2 ? 2.0f : -2.0f);
      }
      const auto w = quantize(wt, wf);
      const auto a = quantize(vec_dot_type(wt), xf);
      const auto wd = dequantize(wt, w, n);
      const auto ad = dequantize(vec_dot_type(wt), a, n);
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        ref += double(wd[i]) * ad[i];
        mag += std::fabs(double(wd[i]) * ad[i]);
      }
      const double tol = 1e-4 * mag;
      EXPECT_NEAR(vec_dot_path(DotPath::Scalar, wt, n, w.data(), a.data()), ref, tol) << name(wt);
      if (has_simd_vec_dot(wt)) {
        EXPECT_NEAR(vec_dot_path(DotPath::Simd, wt, n, w.data(), a.data()), ref, tol) << name(wt);
      }
    }
  }
}

TEST(VecDot, ActivationTypesAndBadLengthsAreErrors) {
  EXPECT_EQ(vec_dot_type(WeightType::Q4_0), WeightType::Q8_0);
  EXPECT_EQ(vec_dot_type(WeightType::Q5_1), WeightType::Q8_1);
  EXPECT_EQ(vec_dot_type(WeightType::Q6_K), WeightType::Q8_K);
  EXPECT_EQ(vec_dot_type(WeightType::BF16), WeightType::F32);
  EXPECT_THROW(vec_dot_type(WeightType::Q8_K), Error);
  std::vector<uint8_t> buf(4096);
  EXPECT_THROW(vec_dot(WeightType::Q8_1, 32, buf.data(), buf.data()), Error);
  EXPECT_THROW(vec_dot(WeightType::Q4_K, 128, buf.data(), buf.data()), Error);
}

}  // namespace
