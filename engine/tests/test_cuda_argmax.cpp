// GPU argmax and top-k over a row of logits (engine/cuda/argmax.cu) against the obvious host
// reference: argmax = first index of the largest non-NaN value; top-k = the k largest, sorted
// descending, lower index first on ties, NaN last. Sizes from 1 to Qwen2's 151,936-entry
// vocabulary (odd ones, a ragged float4 tail, an unaligned row), planted ties and NaNs.
// Tolerance: exact (indices equal, values bit-identical).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/argmax.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

int32_t ref_argmax(const std::vector<float>& x) {
  int32_t best = -1;
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isnan(x[i]) && (best < 0 || x[i] > x[static_cast<size_t>(best)])) best = static_cast<int32_t>(i);
  return best < 0 ? 0 : best;
}

std::vector<int32_t> ref_topk(const std::vector<float>& x, int k) {
  std::vector<int32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    const float va = x[static_cast<size_t>(a)], vb = x[static_cast<size_t>(b)];
    if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
    return va > vb;  // stable: lower index first among equals
  });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

// Logits-like values with planted trouble: a tie for the maximum (the lower index must win),
// NaNs (never win), a duplicated value inside the top few.
std::vector<float> logits(size_t n, uint32_t seed) {
  auto x = random_floats(n, seed, 3.0f);
  if (n >= 8) {
    const size_t hi = static_cast<size_t>(ref_argmax(x));
    x[n - 1] = x[hi];                 // tie with the maximum, at a higher index
    x[(hi + n / 2) % n] = kNaN;       // a NaN somewhere
    x[0] = kNaN;                      // and at the very start
    x[n / 3] = x[n / 5] = x[hi] - 0.5f;  // a tie just below the top
  }
  return x;
}

const size_t kSizes[] = {1, 7, 64, 100, 1000, 2048, 2049, 4097, 5000, 151936};

}  // namespace

TEST(CudaArgmax, MatchesHost) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 1;
  for (size_t n : kSizes)
    for (size_t off : {0, 1}) {  // offset 1: an unaligned row (the scalar path)
      const auto x = logits(n, seed++);
      std::vector<float> padded(off, 1e30f);  // the pad would win if it were read
      padded.insert(padded.end(), x.begin(), x.end());
      auto dx = to_device(padded);
      auto dout = poisoned(sizeof(int32_t));
      cuda::argmax(dx.as<float>() + off, static_cast<int64_t>(n), dout.as<int32_t>(), nullptr);
      EXPECT_EQ(to_host<int32_t>(dout, 1)[0], ref_argmax(x)) << "argmax n=" << n << " offset=" << off;
    }
}

TEST(CudaArgmax, AllNaNGivesZeroAndInfinitiesCount) {
  MINFER_REQUIRE_GPU();
  auto dout = poisoned(sizeof(int32_t));
  auto dnan = to_device(std::vector<float>(33, kNaN));
  cuda::argmax(dnan.as<float>(), 33, dout.as<int32_t>(), nullptr);
  EXPECT_EQ(to_host<int32_t>(dout, 1)[0], 0);
  auto dinf = to_device(std::vector<float>{kNaN, -INFINITY, 3.0f, INFINITY, INFINITY, 1.0f});
  cuda::argmax(dinf.as<float>(), 6, dout.as<int32_t>(), nullptr);
  EXPECT_EQ(to_host<int32_t>(dout, 1)[0], 3);
  auto dneg = to_device(std::vector<float>{kNaN, -INFINITY, -INFINITY});
  cuda::argmax(dneg.as<float>(), 3, dout.as<int32_t>(), nullptr);
  EXPECT_EQ(to_host<int32_t>(dout, 1)[0], 1);
}

TEST(CudaTopk, MatchesHost) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 100;
  for (size_t n : kSizes)
    for (int k : {1, 5, 40, 64}) {
      if (static_cast<size_t>(k) > n) continue;
      const auto x = logits(n, seed++);
      auto dx = to_device(x);
      auto dvals = poisoned(static_cast<size_t>(k) * sizeof(float));
      auto didx = poisoned(static_cast<size_t>(k) * sizeof(int32_t));
      auto scratch = poisoned(static_cast<size_t>(cuda::topk_scratch_floats(static_cast<int64_t>(n), k)) * sizeof(float));
      cuda::topk(dx.as<float>(), static_cast<int64_t>(n), k, dvals.as<float>(), didx.as<int32_t>(), scratch.as<float>(),
                 nullptr);
      const auto vals = to_host<float>(dvals, static_cast<size_t>(k));
      const auto idx = to_host<int32_t>(didx, static_cast<size_t>(k));
      const auto want = ref_topk(x, k);
      const std::string what = "topk n=" + std::to_string(n) + " k=" + std::to_string(k);
      EXPECT_EQ(idx, want) << what;
      for (int j = 0; j < k; ++j) {
        const float w = x[static_cast<size_t>(want[static_cast<size_t>(j)])];
        if (std::isnan(w)) EXPECT_TRUE(std::isnan(vals[static_cast<size_t>(j)])) << what << " rank " << j;
        else EXPECT_EQ(vals[static_cast<size_t>(j)], w) << what << " rank " << j;
      }
    }
}

TEST(CudaTopk, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(4096);
  for (int k : {0, 65, 11}) {  // 11 > n = 10
    try {
      cuda::topk(d.as<float>(), 10, k, d.as<float>(), d.as<int32_t>(), d.as<float>(), nullptr);
      FAIL() << "no error for k=" << k;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("topk"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(cuda::argmax(d.as<float>(), 0, d.as<int32_t>(), nullptr), Error);
}
