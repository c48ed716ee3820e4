// get_rows (engine/cuda/get_rows.cu) against its CPU twin cpu::get_rows, every weight type,
// tables with odd row counts, repeated ids, first/last rows, widths 7/13 (float types),
// 96/896 (32-blocks: 896 is not a multiple of 256) and 256/768/4864 (K-quants).
// Tolerance: the GPU forms each value with the CPU's f32 operations (no FMA contraction); the
// CPU build may contract d*q + m / d*sc*q - dmin*m into an FMA, moving a value by an ulp of its
// product: asserted |gpu - cpu| <= 1e-6 * max |row value| (16 f32 ulps) per element, and exact
// equality for the symmetric/float types where no contraction exists. Out-of-range ids give NaN
// rows (the CPU twin throws on them instead). Outputs are poisoned with NaN first.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "cpu/ops.h"
#include "cuda/get_rows.h"
#include "tests/cuda_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

struct Case {
  WeightType type;
  int64_t n_rows, n_cols;
};

bool may_contract(WeightType t) {
  return t == WeightType::Q4_1 || t == WeightType::Q5_1 || t == WeightType::Q4_K || t == WeightType::Q5_K;
}

class CudaGetRows : public ::testing::TestWithParam<Case> {};

TEST_P(CudaGetRows, MatchesCpuGetRows) {
  MINFER_REQUIRE_GPU();
  const auto [t, n_rows, n_cols] = GetParam();
  const auto w = random_weights(t, n_rows, n_cols, 77 + static_cast<uint32_t>(t));
  WeightView view;
  view.name = "token_embd.weight";
  view.type = t;
  view.rows = n_rows;
  view.cols = n_cols;
  view.data = w.data();
  view.row_bytes = row_bytes(t, n_cols);

  std::vector<int32_t> ids = {0, static_cast<int32_t>(n_rows - 1), static_cast<int32_t>(n_rows / 2), 0};
  std::mt19937 rng(5);
  for (int i = 0; i < 9; ++i) ids.push_back(static_cast<int32_t>(rng() % n_rows));
  const int64_t n_ids = static_cast<int64_t>(ids.size());
  std::vector<float> ref(static_cast<size_t>(n_ids * n_cols));
  cpu::get_rows(view, ids.data(), n_ids, ref.data());

  auto dw = to_device(w, "table");
  auto dids = to_device(ids, "ids");
  auto dy = poisoned(ref.size() * sizeof(float));
  cuda::get_rows(t, dw.get(), n_rows, n_cols, dids.as<int32_t>(), n_ids, dy.as<float>(), nullptr);
  const auto got = to_host<float>(dy, ref.size());

  int bad = 0;
  for (int64_t i = 0; i < n_ids && bad < 8; ++i) {
    double row_max = 0;
    for (int64_t c = 0; c < n_cols; ++c) row_max = std::max(row_max, std::fabs(double(ref[i * n_cols + c])));
    const double tol = may_contract(t) ? 1e-6 * row_max : 0.0;
    for (int64_t c = 0; c < n_cols && bad < 8; ++c) {
      const float g = got[i * n_cols + c], r = ref[i * n_cols + c];
      if (!std::isfinite(g) || std::fabs(double(g) - r) > tol) {
        ++bad;
        ADD_FAILURE() << name(t) << " id " << ids[i] << " col " << c << ": got " << g << ", CPU " << r;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (WeightType t : kAllWeightTypes) {
    const int be = info(t).block_elems;
    if (be == 1) {
      c.push_back({t, 5, 7});
      c.push_back({t, 33, 13});
      c.push_back({t, 101, 896});
    } else if (be == QK) {
      c.push_back({t, 3, 96});
      c.push_back({t, 101, 896});
    } else {
      c.push_back({t, 7, 256});
      c.push_back({t, 31, 768});
      c.push_back({t, 5, 4864});
    }
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaGetRows, ::testing::ValuesIn(cases()), [](const auto& i) {
  return std::string(name(i.param.type)) + "_" + std::to_string(i.param.n_rows) + "x" +
         std::to_string(i.param.n_cols);
});

// An id outside the table writes a NaN row and reads nothing outside w; other rows are intact.
TEST(CudaGetRowsIds, OutOfRangeIdGivesNanRow) {
  MINFER_REQUIRE_GPU();
  for (WeightType t : {WeightType::F32, WeightType::Q8_0, WeightType::Q4_K}) {
    const int64_t n_rows = 4, n_cols = info(t).block_elems == 1 ? 40 : 256;
    const auto w = random_weights(t, n_rows, n_cols, 9);
    const auto ref = dequantize_rows(t, w, n_rows, n_cols);
    const std::vector<int32_t> ids = {-1, 2, static_cast<int32_t>(n_rows), 1 << 30};
    auto dw = to_device(w, "table");
    auto dids = to_device(ids, "ids");
    auto dy = poisoned(ids.size() * n_cols * sizeof(float));
    cuda::get_rows(t, dw.get(), n_rows, n_cols, dids.as<int32_t>(), 4, dy.as<float>(), nullptr);
    const auto got = to_host<float>(dy, ids.size() * n_cols);
    double row_max = 0;
    for (int64_t c = 0; c < n_cols; ++c) row_max = std::max(row_max, std::fabs(double(ref[2 * n_cols + c])));
    for (int64_t c = 0; c < n_cols; ++c) {
      EXPECT_TRUE(std::isnan(got[0 * n_cols + c])) << name(t);
      EXPECT_NEAR(got[1 * n_cols + c], ref[2 * n_cols + c], 1e-6 * row_max) << name(t);
      EXPECT_TRUE(std::isnan(got[2 * n_cols + c])) << name(t);
      EXPECT_TRUE(std::isnan(got[3 * n_cols + c])) << name(t);
    }
  }
}

TEST(CudaGetRowsIds, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto dw = poisoned(1024);
  auto dids = poisoned(64);
  auto dy = poisoned(1024);
  EXPECT_THROW(cuda::get_rows(WeightType::Q8_0, dw.get(), 2, 40, dids.as<int32_t>(), 1, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::get_rows(WeightType::Q8_K, dw.get(), 2, 256, dids.as<int32_t>(), 1, dy.as<float>(), nullptr), Error);
}

}  // namespace
