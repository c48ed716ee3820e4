// matmul_dequant (engine/cuda/matmul_dequant_sm90a.cu: Q4_0 / Q8_0 / Q4_K / Q6_K weights dequantized to f16
// inside an f16 wgmma GEMM) against
//   * a float64 reference on the same rounded operands: W = f16(dequantize_row(w)), X = f16(x);
//   * its CPU twin, matmul_float with those F16 weights on X (cpu/matmul.h);
//   * the f16 path it replaces: dequant_to_f16 (the W16 cache) + cuBLAS (matmul_float_weights).
// Tolerance: every product W X is exact in f32; what differs is the order and rounding of the f32
// sums over K. Asserted per element |got - ref| <= 1e-5 * mag + 1e-7 (mag = sum_k |W X|; f32
// accumulation of a few thousand terms stays near 1e-6 of it) and relative L2 <= 1e-5 overall;
// outputs are poisoned with NaN first, so an element the kernel did not write fails. A wrong
// layout, scale or K slice moves elements by O(mag).
#include <gtest/gtest.h>

#include <cublas_v2.h>

#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/matmul.h"
#include "cuda/convert.h"
#include "cuda/dequant.h"
#include "cuda/elementwise.h"
#include "cuda/matmul_dequant.h"
#include "cuda/matmul_f16.h"
#include "tests/cuda_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

struct Case {
  WeightType type;
  int64_t n_out, n_in, nt;
  bool bias;
  WeightSource src;
};

#define MINFER_REQUIRE_SM90()                                                         \
  do {                                                                                \
    MINFER_REQUIRE_GPU();                                                             \
    if (!cuda::device_is_sm90()) GTEST_SKIP() << "SKIPPED (GPU test): not an sm_90 device"; \
  } while (0)

std::vector<float> round_f16(const std::vector<float>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = fp16_to_f32(f32_to_fp16(v[i]));
  return r;
}

void expect_within(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& mag,
                   const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || std::fabs(got[i] - ref[i]) > 1e-5 * mag[i] + 1e-7)
      if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << ref[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements out of tolerance";
  std::vector<float> rf(ref.begin(), ref.end());
  EXPECT_LE(rel_l2(got, rf), 1e-5) << what << ": relative L2 error vs the float64 reference";
}

class CudaMatmulDequant : public ::testing::TestWithParam<Case> {};

TEST_P(CudaMatmulDequant, MatchesReferenceCpuTwinAndW16Path) {
  MINFER_REQUIRE_SM90();
  const auto [t, n_out, n_in, nt, with_bias, src] = GetParam();
  const uint32_t seed = 77 + static_cast<uint32_t>(t) * 13 + static_cast<uint32_t>(n_out + n_in + nt);
  const auto w = random_weights(t, n_out, n_in, seed, src);
  const auto x = random_floats(static_cast<size_t>(nt * n_in), seed + 1);
  const auto bias = random_floats(static_cast<size_t>(n_out), seed + 2, 0.5f);
  const auto wh = round_f16(dequantize_rows(t, w, n_out, n_in));
  const auto xh = round_f16(x);

  std::vector<double> ref(static_cast<size_t>(nt * n_out)), mag(ref.size());
  for (int64_t tk = 0; tk < nt; ++tk)
    for (int64_t o = 0; o < n_out; ++o) {
      double s = with_bias ? bias[o] : 0.0, m = std::fabs(s);
      for (int64_t k = 0; k < n_in; ++k) {
        const double p = static_cast<double>(wh[o * n_in + k]) * xh[tk * n_in + k];
        s += p;
        m += std::fabs(p);
      }
      ref[tk * n_out + o] = s;
      mag[tk * n_out + o] = m;
    }

  auto dw = to_device(w, "weights");
  auto dx = to_device(x, "activations");
  auto dxh = cuda::DeviceBuffer(static_cast<size_t>(nt * n_in) * 2, "f16 activations");
  auto db = to_device(bias, "bias");
  auto dy = poisoned(ref.size() * sizeof(float));
  cuda::f32_to_f16(dx.as<float>(), dxh.as<__half>(), nt * n_in, nullptr);
  ASSERT_TRUE(cuda::matmul_dequant_applies(t, n_in, dw.get()));
  cuda::matmul_dequant(t, dw.get(), n_out, n_in, dxh.as<__half>(), nt, with_bias ? db.as<float>() : nullptr,
                       dy.as<float>(), nullptr);
  const auto got = to_host<float>(dy, ref.size());
  expect_within(got, ref, mag, std::string(name(t)) + " matmul_dequant vs float64");

  // The CPU twin on the same f16 operands.
  std::vector<uint16_t> wh_bits(wh.size());
  for (size_t i = 0; i < wh.size(); ++i) wh_bits[i] = f32_to_fp16(wh[i]);
  std::vector<float> cpu(ref.size());
  ThreadPool pool(2);
  matmul_float(wh_bits.data(), WeightType::F16, n_out, n_in, xh.data(), nt, with_bias ? bias.data() : nullptr,
               cpu.data(), pool);
  expect_within(cpu, ref, mag, "CPU twin vs float64");
  expect_within(got, std::vector<double>(cpu.begin(), cpu.end()), mag, std::string(name(t)) + " GPU vs CPU twin");

  // The f16 path it stands in for: W16 cache + cuBLAS, then the bias.
  auto dw16 = cuda::DeviceBuffer(static_cast<size_t>(n_out * n_in) * 2, "W16");
  auto dy16 = poisoned(ref.size() * sizeof(float));
  cuda::dequant_to_f16(t, dw.get(), n_out, n_in, dw16.as<__half>(), nullptr);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  cuda::matmul_float_weights(h, WeightType::F16, dw16.get(), n_out, n_in, dx.as<float>(), nt, dxh.get(),
                             dy16.as<float>(), nullptr);
  if (with_bias) cuda::add_bias(dy16.as<float>(), db.as<float>(), dy16.as<float>(), nt, n_out, nullptr);
  const auto w16_path = to_host<float>(dy16, ref.size());
  cublasDestroy(h);
  expect_within(got, std::vector<double>(w16_path.begin(), w16_path.end()), mag,
                std::string(name(t)) + " vs the W16 cache + cuBLAS path");
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (WeightType t : {WeightType::Q4_0, WeightType::Q8_0}) {
    c.push_back({t, 128, 128, 128, false, WeightSource::Quantized});   // one CTA, one K step
    c.push_back({t, 3, 256, 5, true, WeightSource::Quantized});        // mostly empty tile
    c.push_back({t, 200, 896, 130, true, WeightSource::RandomBytes});  // ragged rows and tokens
    c.push_back({t, 96, 4864, 17, false, WeightSource::Quantized});    // 38 K steps
    c.push_back({t, 384, 512, 300, true, WeightSource::Quantized});    // 3 x 3 CTAs
  }
  // K-quants: two K steps per super-block. Q6_K's 630-byte rows of 768 put its 210-byte blocks
  // at every address mod 8 (0, 2, 4, 6); the last block ends the allocation, so a copy past it
  // is a memcheck finding.
  for (WeightType t : {WeightType::Q4_K, WeightType::Q6_K}) {
    c.push_back({t, 128, 256, 128, false, WeightSource::Quantized});   // one CTA, one super-block
    c.push_back({t, 3, 256, 5, true, WeightSource::RandomBytes});      // mostly empty tile
    c.push_back({t, 200, 768, 130, true, WeightSource::RandomBytes});  // ragged rows and tokens
    c.push_back({t, 96, 4864, 17, false, WeightSource::Quantized});    // 19 super-blocks
    c.push_back({t, 384, 512, 300, true, WeightSource::Quantized});    // 3 x 3 CTAs
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(QuantTypes, CudaMatmulDequant, ::testing::ValuesIn(cases()), [](const auto& i) {
  const Case& c = i.param;
  return std::string(name(c.type)) + "_" + std::to_string(c.n_out) + "x" + std::to_string(c.n_in) + "_t" +
         std::to_string(c.nt) + (c.bias ? "_bias" : "") + "_" + source_name(c.src);
});

TEST(CudaMatmulDequantArgs, WhatDoesNotApplyIsAnError) {
  MINFER_REQUIRE_SM90();
  auto w = cuda::DeviceBuffer(1 << 16, "weights");
  auto x = cuda::DeviceBuffer(1 << 16, "x");
  auto y = cuda::DeviceBuffer(1 << 16, "y");
  EXPECT_FALSE(cuda::matmul_dequant_applies(WeightType::Q5_K, 256, w.get()));
  EXPECT_FALSE(cuda::matmul_dequant_applies(WeightType::Q4_1, 128, w.get()));
  EXPECT_FALSE(cuda::matmul_dequant_applies(WeightType::Q4_0, 96, w.get()));
  EXPECT_FALSE(cuda::matmul_dequant_applies(WeightType::Q6_K, 128, w.get()));  // half a super-block
  EXPECT_TRUE(cuda::matmul_dequant_applies(WeightType::Q4_K, 256, w.get()));
  EXPECT_TRUE(cuda::matmul_dequant_applies(WeightType::Q6_K, 512, w.get()));
  EXPECT_FALSE(cuda::matmul_dequant_applies(WeightType::Q8_0, 128, w.as<uint8_t>() + 4));
  EXPECT_TRUE(cuda::matmul_dequant_applies(WeightType::Q8_0, 128, w.get()));
  const auto error_of = [&](int64_t n_in, const void* xp) {
    try {
      cuda::matmul_dequant(WeightType::Q4_0, w.get(), 4, n_in, static_cast<const __half*>(xp), 2, nullptr,
                           y.as<float>(), nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(96, x.get()).find("matmul_dequant: Q4_0 x 96 does not apply"), std::string::npos);
  EXPECT_EQ(error_of(128, x.as<uint8_t>() + 2), "matmul_dequant: x is not 16-byte aligned");
}

}  // namespace
