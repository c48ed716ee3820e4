// matmul_mmq and matmul_float against a naive float64 reference, every weight type, several
// shapes (edge tiles included), nt in {1, 3, 64}, with and without bias, 1..3 threads.
//   matmul_float: reference = dequantized W . x; tolerance 2e-5 of sum |w x| per output.
//   matmul_mmq:   reference = dequantized W . dequantized(quantized x) (what it computes
//                 exactly up to float rounding; Q4_1/Q5_1 add Q8_1's f16 block sums, see
//                 test_quant_vec_dot) and, looser, the float-path result within the
//                 activation quantization error (2% of sum |w x|).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "cpu/matmul.h"
#include "quant/quant.h"

using namespace minfer;

namespace {

struct Shape {
  int64_t n_out, n_in;
};

std::vector<float> random_vec(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// y_ref[t][o] = sum_k w[o][k] x[t][k] + bias[o] in float64, and sum |w x| for tolerances.
void reference(const std::vector<float>& w, const std::vector<float>& x, const float* bias,
               int64_t n_out, int64_t n_in, int64_t nt, std::vector<double>& y, std::vector<double>& mag) {
  y.assign(static_cast<size_t>(nt * n_out), 0);
  mag.assign(y.size(), 0);
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t o = 0; o < n_out; ++o) {
      double s = bias ? bias[o] : 0, m = bias ? std::fabs(bias[o]) : 0;
      for (int64_t k = 0; k < n_in; ++k) {
        const double p = double(w[o * n_in + k]) * x[t * n_in + k];
        s += p;
        m += std::fabs(p);
      }
      y[t * n_out + o] = s;
      mag[t * n_out + o] = m;
    }
}

struct Param {
  WeightType type;
  Shape shape;
};

class MatMul : public ::testing::TestWithParam<Param> {};

TEST_P(MatMul, BothPathsMatchReference) {
  const auto [wt, shape] = GetParam();
  const auto [n_out, n_in] = shape;
  const WeightType at = vec_dot_type(wt);
  const auto wf = random_vec(static_cast<size_t>(n_out * n_in), 11 + static_cast<uint32_t>(wt), 0.05f);
  std::vector<uint8_t> w(row_bytes(wt, n_in) * n_out);
  for (int64_t o = 0; o < n_out; ++o)
    quantize_row(wt, wf.data() + o * n_in, w.data() + o * row_bytes(wt, n_in), n_in);
  std::vector<float> wd(wf.size());
  for (int64_t o = 0; o < n_out; ++o)
    dequantize_row(wt, w.data() + o * row_bytes(wt, n_in), wd.data() + o * n_in, n_in);
  const auto bias = random_vec(static_cast<size_t>(n_out), 5, 0.5f);

  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t nt : {1, 3, 64}) {
      for (bool with_bias : {true, false}) {
        const float* b = with_bias ? bias.data() : nullptr;
        const auto x = random_vec(static_cast<size_t>(nt * n_in), 100 + static_cast<uint32_t>(nt), 1.0f);
        // What MMQ sees: the activations after quantization to the dot type.
        std::vector<float> xq(x.size());
        std::vector<uint8_t> tmp(row_bytes(at, n_in));
        for (int64_t t = 0; t < nt; ++t) {
          quantize_row(at, x.data() + t * n_in, tmp.data(), n_in);
          dequantize_row(at, tmp.data(), xq.data() + t * n_in, n_in);
        }
        std::vector<double> ref_f, mag_f, ref_q, mag_q;
        reference(wd, x, b, n_out, n_in, nt, ref_f, mag_f);
        reference(wd, xq, b, n_out, n_in, nt, ref_q, mag_q);

        std::vector<float> yf(static_cast<size_t>(nt * n_out), NAN), yq(yf.size(), NAN);
        matmul_float(w.data(), wt, n_out, n_in, x.data(), nt, b, yf.data(), pool);
        matmul_mmq(w.data(), wt, n_out, n_in, x.data(), nt, b, yq.data(), pool);
        // Q8_1's block sums are f16: 2^-10 of each product's magnitude covers them.
        const double offset_slack = (wt == WeightType::Q4_1 || wt == WeightType::Q5_1) ? 0x1p-10 : 0.0;
        // The float path for float weights with nt < 4 goes through vec_dot too; same bound.
        const bool mmq_is_float = at == WeightType::F32;
        int bad = 0;
        for (size_t i = 0; i < yf.size() && bad < 5; ++i) {
          const double tf = 2e-5 * mag_f[i] + 1e-6;
          if (std::fabs(yf[i] - ref_f[i]) > tf) {
            ++bad;
            ADD_FAILURE() << "float " << name(wt) << " nt=" << nt << " threads=" << threads << " i=" << i
                          << " got " << yf[i] << " want " << ref_f[i];
          }
          const double tq = (2e-5 + offset_slack) * mag_q[i] + 1e-6;
          const double want_q = mmq_is_float ? ref_f[i] : ref_q[i];
          if (std::fabs(yq[i] - want_q) > tq) {
            ++bad;
            ADD_FAILURE() << "mmq " << name(wt) << " nt=" << nt << " threads=" << threads << " i=" << i
                          << " got " << yq[i] << " want " << want_q;
          }
          if (std::fabs(yq[i] - ref_f[i]) > 0.02 * mag_f[i] + 1e-6) {
            ++bad;
            ADD_FAILURE() << "mmq vs float " << name(wt) << " i=" << i << " " << yq[i] << " vs " << ref_f[i];
          }
        }
      }
    }
  }
}

std::vector<Param> params() {
  const WeightType types[] = {WeightType::F32,  WeightType::F16,  WeightType::BF16, WeightType::Q4_0,
                              WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1, WeightType::Q8_0,
                              WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K};
  std::vector<Param> p;
  for (WeightType t : types) {
    p.push_back({t, {37, 256}});    // a partial strip and a partial tile
    p.push_back({t, {130, 768}});   // three K panels, three tiles
    if (info(t).block_elems < 256) {
      p.push_back({t, {19, 96}});   // K shorter than a panel
      p.push_back({t, {64, 896}});  // Qwen2.5-0.5B's width: a 128-column last panel
    }
  }
  return p;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatMul, ::testing::ValuesIn(params()), [](const auto& info) {
  return std::string(name(info.param.type)) + "_" + std::to_string(info.param.shape.n_out) + "x" +
         std::to_string(info.param.shape.n_in);
});

TEST(MatMul, ZeroTokensWritesNothing) {
  ThreadPool pool(2);
  std::vector<uint8_t> w(row_bytes(WeightType::Q8_0, 64) * 4);
  float y = 42.0f;
  matmul_mmq(w.data(), WeightType::Q8_0, 4, 64, nullptr, 0, nullptr, &y, pool);
  matmul_float(w.data(), WeightType::Q8_0, 4, 64, nullptr, 0, nullptr, &y, pool);
  EXPECT_EQ(y, 42.0f);
}

TEST(MatMul, BadArgumentsAreErrors) {
  ThreadPool pool(1);
  std::vector<uint8_t> w(4096);
  std::vector<float> x(512), y(512);
  EXPECT_THROW(matmul_mmq(w.data(), WeightType::Q8_K, 2, 256, x.data(), 1, nullptr, y.data(), pool), Error);
  EXPECT_THROW(matmul_mmq(w.data(), WeightType::Q4_K, 2, 128, x.data(), 1, nullptr, y.data(), pool), Error);
  EXPECT_THROW(matmul_float(w.data(), WeightType::Q4_0, 2, 48, x.data(), 1, nullptr, y.data(), pool), Error);
  EXPECT_THROW(matmul_float(w.data(), WeightType::Q4_0, 0, 64, x.data(), 1, nullptr, y.data(), pool), Error);
}

}  // namespace
