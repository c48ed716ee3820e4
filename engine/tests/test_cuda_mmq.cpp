// mmq (engine/cuda/mmq.cu), the int8 prefill matmul, every quantized weight type.
// Shapes cover partial output tiles (n_out 1, 7, 33, 130 against 64-row tiles), partial token
// tiles (nt 1, 5, 64, 67, 130 against 64-token tiles), a partial last K step (n_in = 96 or 896
// against 256-element steps) and several K steps (768, 4864); random-bytes and quantizer-made
// weights; with and without bias; every output tile of the kernel (64, 32 and 16 rows per CTA,
// forced through mmq_with_tile, and the launcher's own choice).
//   1. Exact reference: float64 from the SAME weight and Q8_1 bytes (q8_1_reference in
//      cuda_quant_test_util.h: dequantize_row of both, Q8_1's stored f16 s where the kernel
//      uses it for the weight offset). Integer dots are exact; what is left is f32 rounding of
//      scales and of the running sum over 32-blocks: asserted rel L2 <= 1e-5 and every element
//      within 2e-5 * sum|terms| + 1e-6.
//   2. CPU twin matmul_mmq, which quantizes x itself (Q8_0 / Q8_1 / Q8_K by type): asserted
//      every element within 3e-2 * sum_k |w_k x_k| + 1e-5 (activation quantization error).
//   3. mmq with nt = 1 agrees with mmvq within the same f32 rounding (2e-5 * sum|terms|).
// Outputs are poisoned with NaN first, so an output the kernel did not write fails.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/matmul.h"
#include "cuda/mmq.h"
#include "cuda/mmvq.h"
#include "tests/cuda_quant_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

struct Case {
  WeightType type;
  int64_t n_out, n_in, nt;
  WeightSource src;
};

class CudaMmq : public ::testing::TestWithParam<Case> {};

TEST_P(CudaMmq, MatchesReferenceAndCpu) {
  MINFER_REQUIRE_GPU();
  const auto [t, n_out, n_in, nt, src] = GetParam();
  const uint32_t seed = 700 + static_cast<uint32_t>(t) * 13 + static_cast<uint32_t>(n_out + nt);
  const auto w = random_weights(t, n_out, n_in, seed, src);
  const auto x = random_floats(static_cast<size_t>(nt * n_in), seed + 1);
  const auto bias = random_floats(static_cast<size_t>(n_out), seed + 2, 0.5f);
  const auto xq = quantize_q8_1_host(x, nt, n_in);
  const auto wd = dequantize_rows(t, w, n_out, n_in);
  const size_t ny = static_cast<size_t>(nt * n_out);
  ThreadPool pool(2);

  auto dw = to_device(w, "weights");
  auto dxq = to_device(xq, "Q8_1 activations");
  auto dbias = to_device(bias, "bias");
  // references, once per bias setting: exact (same bytes) and the CPU backend's matmul_mmq
  const auto ref_bias = q8_1_reference(t, w, n_out, n_in, xq, nt, bias.data());
  const auto ref_plain = q8_1_reference(t, w, n_out, n_in, xq, nt, nullptr);
  std::vector<float> cpu_bias(ny), cpu_plain(ny);
  matmul_mmq(w.data(), t, n_out, n_in, x.data(), nt, bias.data(), cpu_bias.data(), pool);
  matmul_mmq(w.data(), t, n_out, n_in, x.data(), nt, nullptr, cpu_plain.data(), pool);
  const auto mag_bias = abs_products(wd, x, n_out, n_in, nt, bias.data());
  const auto mag_plain = abs_products(wd, x, n_out, n_in, nt, nullptr);
  for (int tile : {0, 64, 32, 16}) for (bool with_bias : {true, false}) {
    SCOPED_TRACE(std::string(with_bias ? "with bias" : "no bias") + ", tile rows " +
                 (tile ? std::to_string(tile) : std::string("auto")));
    auto dy = poisoned(ny * sizeof(float));
    if (tile == 0)
      cuda::mmq(t, dw.get(), n_out, n_in, dxq.get(), nt, with_bias ? dbias.as<float>() : nullptr, dy.as<float>(),
                nullptr);
    else
      cuda::mmq_with_tile(t, dw.get(), n_out, n_in, dxq.get(), nt, with_bias ? dbias.as<float>() : nullptr,
                          dy.as<float>(), tile, nullptr);
    const auto got = to_host<float>(dy, ny);

    const auto& ref = with_bias ? ref_bias : ref_plain;
    EXPECT_LE(rel_l2(got, to_float(ref.y)), 1e-5) << name(t) << " relative L2 error vs the float64 reference";
    int bad = 0;
    for (size_t i = 0; i < ny && bad < 8; ++i)
      if (!std::isfinite(got[i]) || std::fabs(got[i] - ref.y[i]) > 2e-5 * ref.mag[i] + 1e-6) {
        ++bad;
        ADD_FAILURE() << name(t) << " token " << i / n_out << " row " << i % n_out << ": got " << got[i]
                      << ", reference " << ref.y[i] << " (scale " << ref.mag[i] << ")";
      }

    const auto& cpu = with_bias ? cpu_bias : cpu_plain;
    const auto& mag = with_bias ? mag_bias : mag_plain;
    for (size_t i = 0; i < ny && bad < 8; ++i)
      if (!std::isfinite(got[i]) || std::fabs(double(got[i]) - cpu[i]) > 3e-2 * mag[i] + 1e-5) {
        ++bad;
        ADD_FAILURE() << name(t) << " token " << i / n_out << " row " << i % n_out << ": got " << got[i]
                      << ", CPU matmul_mmq " << cpu[i] << " (scale " << mag[i] << ")";
      }
    EXPECT_EQ(bad, 0);
  }
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (WeightType t : kQuantTypes) {
    if (info(t).block_elems == QK) {
      c.push_back({t, 7, 96, 5, WeightSource::RandomBytes});      // K shorter than one step
      c.push_back({t, 33, 896, 67, WeightSource::RandomBytes});   // 3.5 K steps, 2 token tiles
      c.push_back({t, 130, 4864, 64, WeightSource::RandomBytes}); // 3 output tiles, 19 K steps
      c.push_back({t, 65, 896, 130, WeightSource::Quantized});
      c.push_back({t, 1, 32, 1, WeightSource::RandomBytes});
    } else {
      c.push_back({t, 1, 256, 1, WeightSource::RandomBytes});
      c.push_back({t, 7, 768, 5, WeightSource::RandomBytes});
      c.push_back({t, 130, 768, 67, WeightSource::RandomBytes});
      c.push_back({t, 33, 4864, 64, WeightSource::RandomBytes});
      c.push_back({t, 65, 768, 130, WeightSource::Quantized});
    }
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaMmq, ::testing::ValuesIn(cases()), [](const auto& i) {
  return std::string(name(i.param.type)) + "_" + std::to_string(i.param.n_out) + "x" + std::to_string(i.param.n_in) +
         "_nt" + std::to_string(i.param.nt) + "_" + source_name(i.param.src);
});

// One token through mmq and through mmvq: the same integer dots, summed in a different order.
TEST(CudaMmqVsMmvq, OneTokenAgrees) {
  MINFER_REQUIRE_GPU();
  for (WeightType t : kQuantTypes) {
    const int64_t n_out = 97, n_in = info(t).block_elems == QK ? 896 : 768;
    const auto w = random_weights(t, n_out, n_in, 4242 + static_cast<uint32_t>(t));
    const auto x = random_floats(static_cast<size_t>(n_in), 17);
    const auto xq = quantize_q8_1_host(x, 1, n_in);
    const auto ref = q8_1_reference(t, w, n_out, n_in, xq, 1, nullptr);
    auto dw = to_device(w, "weights");
    auto dxq = to_device(xq, "Q8_1 activations");
    auto d1 = poisoned(n_out * sizeof(float));
    auto d2 = poisoned(n_out * sizeof(float));
    cuda::mmq(t, dw.get(), n_out, n_in, dxq.get(), 1, nullptr, d1.as<float>(), nullptr);
    cuda::mmvq(t, dw.get(), n_out, n_in, dxq.get(), nullptr, d2.as<float>(), nullptr);
    const auto y1 = to_host<float>(d1, n_out);
    const auto y2 = to_host<float>(d2, n_out);
    for (int64_t o = 0; o < n_out; ++o)
      EXPECT_NEAR(y1[o], y2[o], 2e-5 * ref.mag[o] + 1e-6) << name(t) << " row " << o;
  }
}

TEST(CudaMmqArgs, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto dw = poisoned(4096);
  auto dx = poisoned(4096);
  auto dy = poisoned(4096);
  EXPECT_THROW(cuda::mmq(WeightType::F32, dw.get(), 1, 32, dx.get(), 1, nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmq(WeightType::Q6_K, dw.get(), 1, 896, dx.get(), 1, nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmq(WeightType::Q5_1, dw.get(), 1, 48, dx.get(), 1, nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmq_with_tile(WeightType::Q8_0, dw.get(), 1, 32, dx.get(), 1, nullptr, dy.as<float>(), 48, nullptr),
               Error);
  EXPECT_TRUE(cuda::mmq_supports(WeightType::Q4_K));
  EXPECT_FALSE(cuda::mmq_supports(WeightType::F16));
}

}  // namespace
