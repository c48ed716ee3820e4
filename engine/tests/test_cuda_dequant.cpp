// dequant_to_f16 (engine/cuda/dequant.cu) against its CPU twin dequantize_row, every weight type,
// several shapes (odd row counts; float types with a ragged tail of the flat array; 896 wide =
// not a multiple of 256 for the 32-blocks; K-quants at 256/768/4864).
// Tolerance: the GPU forms the same f32 value as the CPU (same operations, no FMA contraction),
// then rounds to f16; the CPU build may contract d*q + m into an FMA, which can move the f32
// value by an ulp and, rarely, the f16 rounding by one f16 ulp. Asserted: every element within
// one f16 ulp of f16(CPU value) (2^-10 relative, 2^-24 absolute near zero); outputs poisoned
// with NaN first, so an element the kernel did not write fails.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "cuda/dequant.h"
#include "tests/cuda_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

struct Case {
  WeightType type;
  int64_t rows, cols;
  WeightSource src;
};

// One f16 ulp at |r|: 2^(floor(log2 |r|) - 10), at least the smallest subnormal.
double f16_ulp(double r) {
  const double a = std::fabs(r);
  if (a < 0x1p-14) return 0x1p-24;
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

class CudaDequant : public ::testing::TestWithParam<Case> {};

TEST_P(CudaDequant, MatchesDequantizeRow) {
  MINFER_REQUIRE_GPU();
  const auto [t, rows, cols, src] = GetParam();
  const auto w = random_weights(t, rows, cols, 1000 + static_cast<uint32_t>(t) + static_cast<uint32_t>(rows), src);
  const auto ref = dequantize_rows(t, w, rows, cols);
  const size_t n = static_cast<size_t>(rows * cols);

  auto dw = to_device(w, "weights");
  auto dy = poisoned(n * sizeof(__half));
  cuda::dequant_to_f16(t, dw.get(), rows, cols, dy.as<__half>(), nullptr);
  const auto got = to_host<uint16_t>(dy, n);

  int bad = 0;
  for (size_t i = 0; i < n && bad < 8; ++i) {
    const double g = fp16_to_f32(got[i]);
    const double r = fp16_to_f32(f32_to_fp16(ref[i]));
    if (!std::isfinite(g) || std::fabs(g - r) > f16_ulp(r)) {
      ++bad;
      ADD_FAILURE() << name(t) << " element " << i << " (row " << i / cols << ", col " << i % cols << "): got " << g
                    << ", CPU " << ref[i] << " -> f16 " << r;
    }
  }
  EXPECT_EQ(bad, 0);
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (WeightType t : kAllWeightTypes) {
    const int be = info(t).block_elems;
    if (be == 1) {
      c.push_back({t, 3, 7, WeightSource::Quantized});    // 21 elements: a ragged 8-chunk
      c.push_back({t, 5, 13, WeightSource::Quantized});
      c.push_back({t, 17, 896, WeightSource::Quantized});
    } else if (be == QK) {
      c.push_back({t, 1, 32, WeightSource::RandomBytes});
      c.push_back({t, 7, 96, WeightSource::RandomBytes});
      c.push_back({t, 33, 896, WeightSource::RandomBytes});
      c.push_back({t, 5, 896, WeightSource::Quantized});
    } else {
      c.push_back({t, 1, 256, WeightSource::RandomBytes});
      c.push_back({t, 5, 768, WeightSource::RandomBytes});
      c.push_back({t, 9, 4864, WeightSource::RandomBytes});
      c.push_back({t, 3, 768, WeightSource::Quantized});
    }
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaDequant, ::testing::ValuesIn(cases()), [](const auto& i) {
  return std::string(name(i.param.type)) + "_" + std::to_string(i.param.rows) + "x" + std::to_string(i.param.cols) +
         "_" + source_name(i.param.src);
});

TEST(CudaDequantArgs, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto dw = poisoned(1024);
  auto dy = poisoned(1024);
  // a Q4_0 row of 48 elements is not whole blocks; Q8_1 is an activation format
  EXPECT_THROW(cuda::dequant_to_f16(WeightType::Q4_0, dw.get(), 1, 48, dy.as<__half>(), nullptr), Error);
  EXPECT_THROW(cuda::dequant_to_f16(WeightType::Q8_1, dw.get(), 1, 32, dy.as<__half>(), nullptr), Error);
  EXPECT_THROW(cuda::dequant_to_f16(WeightType::Q4_K, dw.get(), 1, 896, dy.as<__half>(), nullptr), Error);
}

}  // namespace
