// GPU argmax over a row of logits (engine/cuda/argmax.cu) against the obvious host reference:
// the first index of the largest non-NaN value. Sizes from 1 to Qwen2's 151,936-entry
// vocabulary (odd ones, a ragged float4 tail, an unaligned row), planted ties and NaNs; for the
// multi-CTA argmax also rows past its grid cap (4M), ties spread over the row (the lowest index
// must win across CTA boundaries whatever the tile size), -0/+0 ties, all-NaN rows, back-to-back
// launches and graph replays (its device scratch and ticket counter are reused every launch).
// Tolerance: exact (indices equal, values bit-identical).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
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

// Scratch of one argmax call site, zeroed as argmax.h asks.
cuda::DeviceBuffer argmax_scratch() {
  cuda::DeviceBuffer b(cuda::argmax_scratch_bytes(), "argmax scratch");
  CUDA_CHECK(cudaMemset(b.get(), 0, b.bytes()));
  return b;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

int32_t ref_argmax(const std::vector<float>& x) {
  int32_t best = -1;
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isnan(x[i]) && (best < 0 || x[i] > x[static_cast<size_t>(best)])) best = static_cast<int32_t>(i);
  return best < 0 ? 0 : best;
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
      auto scratch = argmax_scratch();
      cuda::argmax(dx.as<float>() + off, static_cast<int64_t>(n), dout.as<int32_t>(), scratch.get(), nullptr);
      EXPECT_EQ(to_host<int32_t>(dout, 1)[0], ref_argmax(x)) << "argmax n=" << n << " offset=" << off;
    }
}

TEST(CudaArgmax, AllNaNGivesZeroAndInfinitiesCount) {
  MINFER_REQUIRE_GPU();
  auto dout = poisoned(sizeof(int32_t));
  auto scratch = argmax_scratch();
  auto dnan = to_device(std::vector<float>(33, kNaN));
  cuda::argmax(dnan.as<float>(), 33, dout.as<int32_t>(), scratch.get(), nullptr);
  EXPECT_EQ(to_host<int32_t>(dout, 1)[0], 0);
  auto dinf = to_device(std::vector<float>{kNaN, -INFINITY, 3.0f, INFINITY, INFINITY, 1.0f});
  cuda::argmax(dinf.as<float>(), 6, dout.as<int32_t>(), scratch.get(), nullptr);
  EXPECT_EQ(to_host<int32_t>(dout, 1)[0], 3);
  auto dneg = to_device(std::vector<float>{kNaN, -INFINITY, -INFINITY});
  cuda::argmax(dneg.as<float>(), 3, dout.as<int32_t>(), scratch.get(), nullptr);
  EXPECT_EQ(to_host<int32_t>(dout, 1)[0], 1);
}

namespace {

// The device argmax of x (an aligned row, or at element offset `off` of a buffer: unaligned).
int32_t device_argmax(const std::vector<float>& x, size_t off = 0) {
  std::vector<float> padded(off, 1e30f);  // the pad would win if it were read
  padded.insert(padded.end(), x.begin(), x.end());
  auto dx = to_device(padded);
  auto dout = poisoned(sizeof(int32_t));
  auto scratch = argmax_scratch();
  cuda::argmax(dx.as<float>() + off, static_cast<int64_t>(x.size()), dout.as<int32_t>(), scratch.get(), nullptr);
  return to_host<int32_t>(dout, 1)[0];
}

// Positions spread over [0, n): near multiples of every power of two from 2^9 to 2^17 (where a
// CTA's tile may end, whatever the tile size) and random ones, ascending, without duplicates.
std::vector<size_t> spread_positions(size_t n, std::mt19937& rng) {
  std::vector<size_t> p;
  for (size_t step = 512; step <= (size_t{1} << 17); step *= 2)
    for (size_t k = 1; k * step < n && k <= 3; ++k)
      for (size_t d : {k * step - 1, k * step}) p.push_back(d);
  std::uniform_int_distribution<size_t> u(0, n - 1);
  for (int i = 0; i < 8; ++i) p.push_back(u(rng));
  p.push_back(n - 1);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

const size_t kMultiCtaSizes[] = {1, 2, 5, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8193, 151936,
                                 (size_t{1} << 20) + 3, (size_t{1} << 22) + 5};

}  // namespace

// Random rows (never zeros), then the same rows with one maximum planted at several positions
// spread over the row (just before and at the boundaries where a CTA's tile may end, and at
// random places): the lowest copy must win; each position in turn is made the first copy.
TEST(CudaArgmax, TiesAcrossTheRowLowestIndexWins) {
  MINFER_REQUIRE_GPU();
  std::mt19937 rng(7);
  uint32_t seed = 500;
  for (size_t n : kMultiCtaSizes) {
    auto x = random_floats(n, seed++, 3.0f);
    EXPECT_EQ(device_argmax(x), ref_argmax(x)) << "random row n=" << n;
    if (n < 2) continue;
    const auto pos = spread_positions(n, rng);
    // Drop the copies one by one from the front: every position in turn is the first maximum.
    for (size_t first = 0; first < pos.size(); first += (pos.size() > 12 ? 3 : 1)) {
      auto y = x;
      for (size_t j = first; j < pos.size(); ++j) y[pos[j]] = 100.0f;
      ASSERT_EQ(ref_argmax(y), static_cast<int32_t>(pos[first]));
      EXPECT_EQ(device_argmax(y), static_cast<int32_t>(pos[first])) << "n=" << n << " first max at " << pos[first];
      if (n >= 5) {
        EXPECT_EQ(device_argmax(y, 1), static_cast<int32_t>(pos[first])) << "unaligned, n=" << n;
      }
    }
  }
}

// NaN never wins: NaNs planted at and around the maximum, before it, in its float4, and a NaN
// row with a single number (the number wins wherever it is); all-NaN rows give 0.
TEST(CudaArgmax, NaNNeverWinsAllNaNGivesZero) {
  MINFER_REQUIRE_GPU();
  std::mt19937 rng(11);
  uint32_t seed = 900;
  for (size_t n : kMultiCtaSizes) {
    auto x = random_floats(n, seed++, 3.0f);
    const size_t hi = static_cast<size_t>(ref_argmax(x));
    for (size_t d : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{4096}})
      if (hi + d + 1 < n) x[hi + d + 1] = kNaN;  // after it
    if (hi > 0) x[hi - 1] = kNaN;                 // just before it
    if (hi > 0) x[0] = kNaN;                      // at the very start
    for (size_t i = 7; i < n; i += 977) x[i] = kNaN;  // scattered over every tile
    EXPECT_EQ(device_argmax(x), ref_argmax(x)) << "NaNs planted, n=" << n;
    EXPECT_EQ(device_argmax(x, 1), ref_argmax(x)) << "NaNs planted, unaligned, n=" << n;

    std::vector<float> nan(n, kNaN);
    EXPECT_EQ(device_argmax(nan), 0) << "all NaN, n=" << n;
    EXPECT_EQ(device_argmax(nan, 3), 0) << "all NaN, unaligned, n=" << n;
    std::uniform_int_distribution<size_t> u(0, n - 1);
    const size_t only = u(rng);
    nan[only] = -INFINITY;  // the one number, however small, beats every NaN
    EXPECT_EQ(device_argmax(nan), static_cast<int32_t>(only)) << "one -inf among NaNs, n=" << n;
  }
}

// -0 and +0 compare equal: the lower index wins whichever sign it has, also across tiles; every
// other value is negative (never zero: the zeros are planted).
TEST(CudaArgmax, SignedZerosTieLowestIndexWins) {
  MINFER_REQUIRE_GPU();
  for (size_t n : {size_t{8}, size_t{4097}, size_t{151936}}) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = -1.0f - static_cast<float>(i % 101);
    for (auto [lo, hi] : {std::pair<size_t, size_t>{1, n - 2}, {n / 2, n - 1}, {2, 3}}) {
      for (bool neg_first : {true, false}) {
        auto y = x;
        y[lo] = neg_first ? -0.0f : 0.0f;
        y[hi] = neg_first ? 0.0f : -0.0f;
        EXPECT_EQ(device_argmax(y), static_cast<int32_t>(lo))
            << "n=" << n << " " << (neg_first ? "-0" : "+0") << " at " << lo << ", the other zero at " << hi;
      }
    }
  }
}

// Many launches back to back on one stream (no host sync between them), the same on two streams
// at once (each stream with its own scratch), and a captured graph replayed with new rows:
// the device scratch and the last-CTA ticket are reused correctly.
TEST(CudaArgmax, BackToBackConcurrentAndGraphReplays) {
  MINFER_REQUIRE_GPU();
  constexpr size_t kRows = 24;
  const size_t n = 151936;
  std::vector<std::vector<float>> rows;
  std::vector<cuda::DeviceBuffer> drows;
  for (size_t r = 0; r < kRows; ++r) {
    rows.push_back(random_floats(n, 2000 + static_cast<uint32_t>(r), 3.0f));
    if (r % 3 == 1) rows.back()[r * 4099 % n] = 50.0f;  // a maximum at a chosen place
    drows.push_back(to_device(rows.back()));
  }
  auto dout = poisoned(2 * kRows * sizeof(int32_t));
  CUDA_CHECK(cudaDeviceSynchronize());  // the uploads (legacy stream) have landed before s0, s1 read them
  cudaStream_t st[2] = {nullptr, nullptr};
  for (auto& s : st) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cuda::DeviceBuffer scratch[2] = {argmax_scratch(), argmax_scratch()};  // one per stream
  auto launch = [&](size_t r, size_t out, cudaStream_t s) {
    cuda::argmax(drows[r].as<float>(), static_cast<int64_t>(n), dout.as<int32_t>() + out, scratch[s == st[1]].get(), s);
  };
  auto check = [&](size_t count, const char* what) {
    const auto got = to_host<int32_t>(dout, 2 * kRows);
    for (size_t i = 0; i < count; ++i)
      EXPECT_EQ(got[i], ref_argmax(rows[i % kRows])) << what << ", output " << i;
  };
  for (int rep = 0; rep < 3; ++rep)
    for (size_t r = 0; r < kRows; ++r) launch(r, r, st[0]);
  check(kRows, "one stream");
  CUDA_CHECK(cudaMemset(dout.get(), 0xFF, 2 * kRows * sizeof(int32_t)));
  CUDA_CHECK(cudaDeviceSynchronize());  // the poison is in place before the streams write
  for (int rep = 0; rep < 3; ++rep)
    for (size_t r = 0; r < kRows; ++r) {  // output i = row i % kRows: stream 0 writes [0, 24), stream 1 [24, 48)
      launch(r, r, st[0]);
      launch(r, kRows + r, st[1]);
    }
  check(2 * kRows, "two streams at once");
  // The same as two captured graphs launched at once (a paired run's two backends replay their
  // decode graphs concurrently): on the GPU the two chains of launches overlap.
  CUDA_CHECK(cudaMemset(dout.get(), 0xFF, 2 * kRows * sizeof(int32_t)));
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaGraphExec_t pair[2] = {nullptr, nullptr};
  for (size_t k = 0; k < 2; ++k) {
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(st[k], cudaStreamCaptureModeThreadLocal));
    for (size_t r = 0; r < kRows; ++r) launch(r, k * kRows + r, st[k]);
    CUDA_CHECK(cudaStreamEndCapture(st[k], &g));
    CUDA_CHECK(cudaGraphInstantiate(&pair[k], g, 0));
    cudaGraphDestroy(g);
  }
  for (int rep = 0; rep < 5; ++rep) {
    CUDA_CHECK(cudaGraphLaunch(pair[0], st[0]));
    CUDA_CHECK(cudaGraphLaunch(pair[1], st[1]));
  }
  check(2 * kRows, "two graphs at once");
  for (auto& e : pair) cudaGraphExecDestroy(e);

  // One graph: argmax of rows 0, 1, 2 (three launches); replayed after rewriting the rows.
  cudaStream_t s = st[0];
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (size_t r = 0; r < 3; ++r) launch(r, r, s);
  CUDA_CHECK(cudaStreamEndCapture(s, &g));
  CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
  for (size_t replay = 0; replay < 4; ++replay) {
    for (size_t r = 0; r < 3; ++r) {
      auto& row = rows[r];
      row = random_floats(n, 3000 + static_cast<uint32_t>(replay * 3 + r), 3.0f);
      row[(replay * 37633 + r * 20011) % n] = 60.0f;
      CUDA_CHECK(cudaMemcpyAsync(drows[r].get(), row.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    }
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    check(3, ("graph replay " + std::to_string(replay)).c_str());
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  for (auto& x : st) cudaStreamDestroy(x);
}

TEST(CudaArgmax, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(4096);
  EXPECT_THROW(cuda::argmax(d.as<float>(), 0, d.as<int32_t>(), d.get(), nullptr), Error);
  EXPECT_THROW(cuda::argmax(d.as<float>(), 10, d.as<int32_t>(), nullptr, nullptr), Error);
}
