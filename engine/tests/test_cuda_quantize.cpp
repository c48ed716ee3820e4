// quantize_q8_1 (engine/cuda/quantize.cu) against its CPU twin quantize_row(WeightType::Q8_1):
// the bytes must be identical. Both sides compute d = amax/127 and id = 1/d as IEEE divisions,
// x*id as one rounded product, clamp to [-127, 127] and round to nearest with ties to even
// (CPU round_clamp, GPU __float2int_rn), and s = f16(f16(d) * sum q): so even ties agree and
// the tolerance is zero (every byte of d, s and the 32 codes). Inputs: random normals with
// outliers, one block of exact zeros (d = 0 path) and one of exact .5 ties after scaling.
// The output is poisoned first (0xFF bytes), so a block the kernel skipped fails.
#include <gtest/gtest.h>

#include "core/error.h"
#include "cuda/quantize.h"
#include "tests/cuda_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

struct Shape {
  int64_t rows, cols;
};

class CudaQuantizeQ8_1 : public ::testing::TestWithParam<Shape> {};

TEST_P(CudaQuantizeQ8_1, BytesMatchQuantizeRow) {
  MINFER_REQUIRE_GPU();
  const auto [rows, cols] = GetParam();
  auto x = random_floats(static_cast<size_t>(rows * cols), 31 + static_cast<uint32_t>(cols), 2.0f);
  if (rows * cols >= 128) {
    for (int k = 0; k < 32; ++k) x[32 + k] = 0.0f;  // a zero block: d = 0, all codes 0
    // a tie block: amax 127 gives d = 1, id = 1; k + 0.5 values round to even on both sides
    for (int k = 0; k < 32; ++k) x[64 + k] = k == 0 ? 127.0f : static_cast<float>(k % 9) - 4.5f;
  }
  const auto ref = quantize_q8_1_host(x, rows, cols);

  auto dx = to_device(x, "activations");
  auto dy = poisoned(ref.size());
  cuda::quantize_q8_1(dx.as<float>(), rows, cols, dy.get(), nullptr);
  const auto got = to_host<uint8_t>(dy, ref.size());

  int bad = 0;
  for (size_t i = 0; i < ref.size() && bad < 8; ++i)
    if (got[i] != ref[i]) {
      ++bad;
      const size_t blk = i / sizeof(BlockQ8_1), off = i % sizeof(BlockQ8_1);
      ADD_FAILURE() << "block " << blk << " byte " << off << " (" << (off < 2 ? "d" : off < 4 ? "s" : "code")
                    << "): got " << int(got[i]) << ", CPU " << int(ref[i]);
    }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaQuantizeQ8_1,
                         ::testing::Values(Shape{1, 32}, Shape{1, 896}, Shape{3, 96}, Shape{7, 896}, Shape{5, 4864},
                                           Shape{67, 896}, Shape{1, 151936}),
                         [](const auto& i) {
                           return std::to_string(i.param.rows) + "x" + std::to_string(i.param.cols);
                         });

TEST(CudaQuantizeQ8_1Args, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto dx = poisoned(4096);
  auto dy = poisoned(4096);
  EXPECT_THROW(cuda::quantize_q8_1(dx.as<float>(), 1, 40, dy.get(), nullptr), Error);  // 40 % 32 != 0
  EXPECT_THROW(cuda::quantize_q8_1(dx.as<float>() + 1, 1, 32, dy.get(), nullptr), Error);  // not 16-byte aligned
}

}  // namespace
