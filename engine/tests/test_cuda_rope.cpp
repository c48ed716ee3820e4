// GPU RoPE, NeoX layout (engine/cuda/rope.cu) against cpu::rope_neox: random rows, random
// positions up to 32k read from device memory, head_dim 64/128 (Qwen2) and odd ones (2, 6, 200,
// 256), base 1e6 (Qwen2) and 1e4, and in place.
// Tolerance: each output within 1e-6 of |x0| + |x1| (the magnitude of the rotated pair), i.e.
// 1e-6 relative to its inputs: both sides take cos/sin from a double angle rounded to float, so
// they differ only by how the compiler fuses x0 cos - x1 sin (a last-bit difference that a
// per-element relative test would blow up where the two terms cancel).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/ops.h"
#include "cuda/rope.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

constexpr double kRel = 1e-6;

struct Case {
  int64_t rows, n_heads, head_dim;
  double base;
};

void check_case(const Case& c, bool in_place, uint32_t seed) {
  ThreadPool pool(2);
  const int64_t cols = c.n_heads * c.head_dim, half = c.head_dim / 2;
  const size_t n = static_cast<size_t>(c.rows * cols);
  const auto x = random_floats(n, seed);
  std::mt19937 rng(seed + 1);
  std::vector<int32_t> pos(static_cast<size_t>(c.rows));
  for (auto& p : pos) p = static_cast<int32_t>(rng() % 32768);
  pos[0] = 0;
  if (c.rows > 1) pos[1] = 32767;
  std::vector<float> want(n);
  cpu::rope_neox(x.data(), pos.data(), want.data(), c.rows, c.n_heads, c.head_dim, c.base, pool);

  auto dx = to_device(x);
  auto dpos = to_device(pos);
  auto dy = poisoned(n * sizeof(float));
  float* y = in_place ? dx.as<float>() : dy.as<float>();
  cuda::rope_neox(dx.as<float>(), dpos.as<int32_t>(), y, c.rows, c.n_heads, c.head_dim, c.base, nullptr);
  const auto got = to_host<float>(in_place ? dx : dy, n);

  const std::string what = "rope rows=" + std::to_string(c.rows) + " heads=" + std::to_string(c.n_heads) +
                           " head_dim=" + std::to_string(c.head_dim) + (in_place ? " in place" : "");
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t in_head = static_cast<int64_t>(i) % c.head_dim;
    const size_t i0 = in_head < half ? i : i - static_cast<size_t>(half);  // the pair (x0, x1)
    const double tol = kRel * (std::fabs(x[i0]) + std::fabs(x[i0 + static_cast<size_t>(half)])) + 1e-30;
    if (!std::isfinite(got[i]) || std::fabs(static_cast<double>(got[i]) - want[i]) > tol)
      if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements out of tolerance";
}

}  // namespace

TEST(CudaRope, MatchesCpu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const Case& c : {Case{1, 14, 64, 1e6}, Case{1, 2, 64, 1e6}, Case{37, 14, 64, 1e6}, Case{5, 16, 128, 1e6},
                        Case{3, 3, 2, 1e4}, Case{9, 5, 6, 1e4}, Case{4, 2, 200, 1e6}, Case{2, 7, 256, 1e4},
                        Case{300, 2, 64, 1e6}})
    check_case(c, false, seed++);
}

TEST(CudaRope, InPlace) {
  MINFER_REQUIRE_GPU();
  check_case(Case{11, 14, 64, 1e6}, true, 77);
}

TEST(CudaRope, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(4096);
  for (int64_t head_dim : {int64_t{7}, int64_t{258}, int64_t{0}}) {
    try {
      cuda::rope_neox(d.as<float>(), d.as<int32_t>(), d.as<float>(), 1, 1, head_dim, 1e6, nullptr);
      FAIL() << "no error for head_dim " << head_dim;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rope_neox"), std::string::npos) << e.what();
    }
  }
}
