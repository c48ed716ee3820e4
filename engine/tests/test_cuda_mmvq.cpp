// mmvq and gemv_float (engine/cuda/mmvq.cu), the decode matrix-vector products.
//
// mmvq, every quantized weight type, random-bytes and quantizer-made weights, rows of 32/96/896
// (32-blocks) or 256/768/4864 (K-quants), 2176/2304, and the 7B widths 3584/18944, odd row counts
// (1, 7, 9, 29, 33, 67, 131, 2113, 4099), with and without bias. Rows of 32-element block types
// with >= 2048 elements that are a multiple of 4 bytes stream (mmvq_stream.cu: 4-, 8- and 16-byte
// copies, one chunk or several with a partial last one, groups of one row and of two); the others
// (short rows, an odd number of 18/22/34-byte blocks, K-quants) take mmvq.cu's kernel, in both CTA
// shapes. Q4_0 rows of whole 8-block units (n_in a multiple of 256) and Q8_0 rows of whole
// 4-block units (128) stream through the direct kernel (mmvq_direct.cu) and, checked too, through
// the ring kernel; Q4_K rows of >= 2048 elements through the direct kernel and, checked too,
// mmvq.cu's.
//   1. Exact reference: float64 from the SAME weight and Q8_1 bytes (quant_test_data.h's
//      q8_1_reference: dequantize_row of both, with Q8_1's stored f16 s where the kernel uses it
//      for the weight offset). The kernel's integer dots are exact, so what is left is f32
//      rounding of per-group scales and partial sums: asserted rel L2 <= 1e-5 and every element
//      within 2e-5 * sum|terms| + 1e-6.
//   2. CPU twin matmul_mmq (nt = 1), which quantizes x itself (Q8_0 / Q8_1 / Q8_K by type):
//      the two differ by the activation quantization error: asserted every element within
//      3e-2 * sum_k |w_k x_k| + 1e-5.
//   3. quantize_q8_1 on the GPU then mmvq gives exactly the host-quantized result (same bytes).
//   4. mmvq_residual (streamed rows): mmvq's bits, and y + residual as the Add computes it, also
//      in place over the residual.
// gemv_float, F32/F16/BF16, n_in 7/13/100 (element path) and 896/4864 (8-wide path): against a
// float64 reference of the same weights: every element within 2e-5 * sum|w x| + 1e-6.
// Outputs are poisoned with NaN first, so an output the kernel did not write fails.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/matmul.h"
#include "cuda/mmvq.h"
#include "cuda/mmvq_stream.h"
#include "cuda/quantize.h"
#include "tests/cuda_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

struct Case {
  WeightType type;
  int64_t n_out, n_in;
  WeightSource src;
};

class CudaMmvq : public ::testing::TestWithParam<Case> {};

TEST_P(CudaMmvq, MatchesReferenceAndCpu) {
  MINFER_REQUIRE_GPU();
  const auto [t, n_out, n_in, src] = GetParam();
  const uint32_t seed = 500 + static_cast<uint32_t>(t) * 7 + static_cast<uint32_t>(n_out);
  const auto w = random_weights(t, n_out, n_in, seed, src);
  const auto x = random_floats(static_cast<size_t>(n_in), seed + 1);
  const auto bias = random_floats(static_cast<size_t>(n_out), seed + 2, 0.5f);
  const auto xq = quantize_q8_1_host(x, 1, n_in);
  const auto wd = dequantize_rows(t, w, n_out, n_in);
  ThreadPool pool(2);

  auto dw = to_device(w, "weights");
  auto dxq = to_device(xq, "Q8_1 activations");
  auto dbias = to_device(bias, "bias");
  // Q4_0, Q8_0 and Q4_K rows of whole units stream through the direct kernel by default: the
  // kernel they take without it (the ring, or mmvq.cu's for Q4_K) is checked on them too.
  const bool has_direct = t == WeightType::Q4_0 || t == WeightType::Q8_0 || t == WeightType::Q4_K;
  const std::vector<bool> directs = has_direct ? std::vector<bool>{true, false} : std::vector<bool>{true};
  for (bool direct : directs) for (bool with_bias : {true, false}) {
    SCOPED_TRACE(std::string(with_bias ? "with bias" : "no bias") + (direct ? "" : ", without the direct kernel"));
    cuda::set_direct_enabled(direct);
    const float* b = with_bias ? bias.data() : nullptr;
    auto dy = poisoned(static_cast<size_t>(n_out) * sizeof(float));
    cuda::mmvq(t, dw.get(), n_out, n_in, dxq.get(), with_bias ? dbias.as<float>() : nullptr, dy.as<float>(), nullptr);
    const auto got = to_host<float>(dy, static_cast<size_t>(n_out));

    // 1. exact reference from the same bytes
    const auto ref = q8_1_reference(t, w, n_out, n_in, xq, 1, b);
    const double rel = rel_l2(got, to_float(ref.y));
    EXPECT_LE(rel, 1e-5) << name(t) << " relative L2 error vs the float64 reference";
    int bad = 0;
    for (int64_t o = 0; o < n_out && bad < 8; ++o)
      if (!std::isfinite(got[o]) || std::fabs(got[o] - ref.y[o]) > 2e-5 * ref.mag[o] + 1e-6) {
        ++bad;
        ADD_FAILURE() << name(t) << " row " << o << ": got " << got[o] << ", reference " << ref.y[o]
                      << " (scale " << ref.mag[o] << ")";
      }

    // 2. the CPU backend's matmul_mmq on the f32 activations
    std::vector<float> cpu(static_cast<size_t>(n_out));
    matmul_mmq(w.data(), t, n_out, n_in, x.data(), 1, b, cpu.data(), pool);
    const auto mag = abs_products(wd, x, n_out, n_in, 1, b);
    for (int64_t o = 0; o < n_out && bad < 8; ++o)
      if (!std::isfinite(got[o]) || std::fabs(double(got[o]) - cpu[o]) > 3e-2 * mag[o] + 1e-5) {
        ++bad;
        ADD_FAILURE() << name(t) << " row " << o << ": got " << got[o] << ", CPU matmul_mmq " << cpu[o]
                      << " (scale " << mag[o] << ")";
      }
    EXPECT_EQ(bad, 0);
  }
  cuda::set_direct_enabled(true);

  // 3. GPU quantization + mmvq == host quantization + mmvq, bit for bit
  auto dx = to_device(x, "activations");
  auto dxq2 = poisoned(xq.size());
  auto dy1 = poisoned(static_cast<size_t>(n_out) * sizeof(float));
  auto dy2 = poisoned(static_cast<size_t>(n_out) * sizeof(float));
  cuda::quantize_q8_1(dx.as<float>(), 1, n_in, dxq2.get(), nullptr);
  cuda::mmvq(t, dw.get(), n_out, n_in, dxq2.get(), dbias.as<float>(), dy1.as<float>(), nullptr);
  cuda::mmvq(t, dw.get(), n_out, n_in, dxq.get(), dbias.as<float>(), dy2.as<float>(), nullptr);
  const auto y1 = to_host<float>(dy1, static_cast<size_t>(n_out));
  const auto y2 = to_host<float>(dy2, static_cast<size_t>(n_out));
  for (int64_t o = 0; o < n_out; ++o) ASSERT_EQ(y1[o], y2[o]) << name(t) << " row " << o;

  // 4. mmvq_residual (streamed rows): mmvq's y and the residual Add's y + residual, bit for bit,
  //    into a separate buffer and in place over the residual (as the FFN down's fused launch).
  if (!cuda::mmvq_residual_usable(t, n_in)) return;
  const auto res = random_floats(static_cast<size_t>(n_out), seed + 3);
  for (bool in_place : {false, true}) {
    SCOPED_TRACE(in_place ? "residual in place" : "residual into its own buffer");
    auto dres = to_device(res, "residual");
    auto dy = poisoned(static_cast<size_t>(n_out) * sizeof(float));
    auto dsum = poisoned(static_cast<size_t>(n_out) * sizeof(float));
    float* y_res = in_place ? dres.as<float>() : dsum.as<float>();
    cuda::mmvq_residual(t, dw.get(), n_out, n_in, dxq.get(), dbias.as<float>(), dy.as<float>(), dres.as<float>(), y_res,
                        nullptr);
    const auto y = to_host<float>(dy, static_cast<size_t>(n_out));
    const auto sum = to_host<float>(in_place ? dres : dsum, static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      ASSERT_EQ(y[o], y2[o]) << name(t) << " row " << o;
      ASSERT_EQ(sum[o], y2[o] + res[static_cast<size_t>(o)]) << name(t) << " row " << o;
    }
  }
}

std::vector<Case> mmvq_cases() {
  std::vector<Case> c;
  for (WeightType t : kQuantTypes) {
    if (info(t).block_elems == QK) {
      c.push_back({t, 1, 32, WeightSource::RandomBytes});
      c.push_back({t, 7, 96, WeightSource::RandomBytes});
      c.push_back({t, 33, 896, WeightSource::RandomBytes});     // one warp per row, partial CTA
      c.push_back({t, 131, 4864, WeightSource::RandomBytes});   // four warps per row
      c.push_back({t, 4099, 896, WeightSource::Quantized});     // many CTAs, real quantizer output
      c.push_back({t, 67, 3584, WeightSource::Quantized});      // Qwen2.5-7B widths: streamed rows of
      c.push_back({t, 29, 18944, WeightSource::RandomBytes});   // several chunks, the last one partial
      c.push_back({t, 9, 2176, WeightSource::RandomBytes});     // 68 blocks: 8-byte copies (Q4_0, Q5_0, Q8_0)
      c.push_back({t, 2113, 2176, WeightSource::RandomBytes});  // enough rows for groups of two (132 SMs)
      c.push_back({t, 2113, 2304, WeightSource::RandomBytes});  // the same, in whole 8-block units (direct)
    } else {
      c.push_back({t, 1, 256, WeightSource::RandomBytes});
      c.push_back({t, 7, 768, WeightSource::RandomBytes});      // one warp per row
      c.push_back({t, 131, 4864, WeightSource::RandomBytes});   // four warps per row
      c.push_back({t, 33, 4864, WeightSource::Quantized});
      c.push_back({t, 67, 3584, WeightSource::Quantized});      // Qwen2.5-7B widths
      c.push_back({t, 29, 18944, WeightSource::RandomBytes});
      c.push_back({t, 2113, 2304, WeightSource::RandomBytes});
    }
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaMmvq, ::testing::ValuesIn(mmvq_cases()), [](const auto& i) {
  return std::string(name(i.param.type)) + "_" + std::to_string(i.param.n_out) + "x" +
         std::to_string(i.param.n_in) + "_" + source_name(i.param.src);
});

struct FloatCase {
  WeightType type;
  int64_t n_out, n_in;
};
class CudaGemvFloat : public ::testing::TestWithParam<FloatCase> {};

TEST_P(CudaGemvFloat, MatchesFloat64Reference) {
  MINFER_REQUIRE_GPU();
  const auto [t, n_out, n_in] = GetParam();
  const uint32_t seed = 900 + static_cast<uint32_t>(t) + static_cast<uint32_t>(n_in);
  const auto w = random_weights(t, n_out, n_in, seed);
  const auto wd = dequantize_rows(t, w, n_out, n_in);
  const auto x = random_floats(static_cast<size_t>(n_in), seed + 1);
  const auto bias = random_floats(static_cast<size_t>(n_out), seed + 2, 0.5f);
  auto dw = to_device(w, "weights");
  auto dx = to_device(x, "activations");
  auto dbias = to_device(bias, "bias");
  for (bool with_bias : {true, false}) {
    const float* b = with_bias ? bias.data() : nullptr;
    auto dy = poisoned(static_cast<size_t>(n_out) * sizeof(float));
    cuda::gemv_float(t, dw.get(), n_out, n_in, dx.as<float>(), with_bias ? dbias.as<float>() : nullptr,
                     dy.as<float>(), nullptr);
    const auto got = to_host<float>(dy, static_cast<size_t>(n_out));
    const auto mag = abs_products(wd, x, n_out, n_in, 1, b);
    int bad = 0;
    for (int64_t o = 0; o < n_out && bad < 8; ++o) {
      double ref = b ? b[o] : 0.0;
      for (int64_t k = 0; k < n_in; ++k) ref += static_cast<double>(wd[o * n_in + k]) * x[k];
      if (!std::isfinite(got[o]) || std::fabs(got[o] - ref) > 2e-5 * mag[o] + 1e-6) {
        ++bad;
        ADD_FAILURE() << name(t) << (with_bias ? " bias" : "") << " row " << o << ": got " << got[o]
                      << ", reference " << ref;
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

std::vector<FloatCase> gemv_cases() {
  std::vector<FloatCase> c;
  for (WeightType t : {WeightType::F32, WeightType::F16, WeightType::BF16})
    for (auto [n_out, n_in] : {std::pair<int64_t, int64_t>{1, 7}, {5, 13}, {9, 100}, {33, 896}, {131, 4864}, {4099, 896}})
      c.push_back({t, n_out, n_in});
  return c;
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, CudaGemvFloat, ::testing::ValuesIn(gemv_cases()), [](const auto& i) {
  return std::string(name(i.param.type)) + "_" + std::to_string(i.param.n_out) + "x" + std::to_string(i.param.n_in);
});

TEST(CudaMmvqArgs, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto dw = poisoned(4096);
  auto dx = poisoned(4096);
  auto dy = poisoned(4096);
  EXPECT_THROW(cuda::mmvq(WeightType::F16, dw.get(), 1, 32, dx.get(), nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmvq(WeightType::Q4_K, dw.get(), 1, 896, dx.get(), nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmvq(WeightType::Q4_0, dw.get(), 1, 40, dx.get(), nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::gemv_float(WeightType::Q8_0, dw.get(), 1, 32, dx.as<float>(), nullptr, dy.as<float>(), nullptr),
               Error);
  EXPECT_THROW(cuda::mmvq_residual(WeightType::Q4_0, dw.get(), 1, 2304, dx.get(), nullptr, dy.as<float>(), nullptr,
                                   dy.as<float>(), nullptr),
               Error);  // no residual
  EXPECT_TRUE(cuda::mmvq_supports(WeightType::Q6_K));
  EXPECT_FALSE(cuda::mmvq_supports(WeightType::BF16));
}

}  // namespace
