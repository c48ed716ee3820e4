// GPU RMSNorm (engine/cuda/rms_norm.cu) against cpu::rms_norm on random rows with planted
// outliers (Qwen's residual stream has them), several widths (odd ones, Qwen2's 896/1536, a
// width > 8 KiB), pointers offset by one float (the scalar path), and in place.
// Tolerance: every element within 1e-6 relative of the CPU result (both sides sum squares in
// double, so the row scale agrees to the last float bit in practice).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/ops.h"
#include "cuda/rms_norm.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

constexpr double kRel = 1e-6;

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  minfer::testing::expect_close(got, want, kRel, what);
}

struct Shape {
  int64_t rows, cols;
};

}  // namespace

TEST(CudaRmsNorm, MatchesCpu) {
  MINFER_REQUIRE_GPU();
  ThreadPool pool(2);
  const float eps = 1e-6f;
  uint32_t seed = 1;
  for (Shape sh : {Shape{1, 896}, Shape{7, 4099}, Shape{3, 5}, Shape{64, 1536}, Shape{2, 8192}, Shape{5, 1}, Shape{300, 12}})
    for (size_t off : {0, 1}) {
      const size_t n = static_cast<size_t>(sh.rows * sh.cols);
      auto x = random_floats(n, seed++, 2.0f);
      for (size_t r = 0; r < static_cast<size_t>(sh.rows); ++r) x[r * sh.cols] += 30.0f;  // an outlier channel
      auto w = random_floats(static_cast<size_t>(sh.cols), seed++, 0.5f);
      for (auto& v : w) v += 1.0f;
      std::vector<float> want(n);
      cpu::rms_norm(x.data(), w.data(), want.data(), sh.rows, sh.cols, eps, pool);

      std::vector<float> xp(off, 1.0f), wp(off, 1.0f);
      xp.insert(xp.end(), x.begin(), x.end());
      wp.insert(wp.end(), w.begin(), w.end());
      auto dx = to_device(xp), dw = to_device(wp);
      auto dy = poisoned((n + off) * sizeof(float));
      cuda::rms_norm(dx.as<float>() + off, dw.as<float>() + off, dy.as<float>() + off, sh.rows, sh.cols, eps, nullptr);
      auto got = to_host<float>(dy, n + off);
      got.erase(got.begin(), got.begin() + static_cast<long>(off));
      expect_close(got, want, "rms_norm " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " offset=" + std::to_string(off));
    }
}

TEST(CudaRmsNorm, InPlace) {
  MINFER_REQUIRE_GPU();
  ThreadPool pool(1);
  const int64_t rows = 9, cols = 896;
  const auto x = random_floats(static_cast<size_t>(rows * cols), 42);
  const auto w = random_floats(static_cast<size_t>(cols), 43);
  std::vector<float> want(x.size());
  cpu::rms_norm(x.data(), w.data(), want.data(), rows, cols, 1e-5f, pool);
  auto dx = to_device(x), dw = to_device(w);
  cuda::rms_norm(dx.as<float>(), dw.as<float>(), dx.as<float>(), rows, cols, 1e-5f, nullptr);
  expect_close(to_host<float>(dx, x.size()), want, "rms_norm in place");
}

TEST(CudaRmsNorm, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(64);
  try {
    cuda::rms_norm(d.as<float>(), d.as<float>(), d.as<float>(), 1, 0, 1e-6f, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rms_norm"), std::string::npos) << e.what();
  }
}
