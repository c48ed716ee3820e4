// GPU RoPE (engine/cuda/rope.cu) against its CPU twins, in both layouts: NeoX (cpu::rope_neox,
// Qwen2/Qwen3) and normal (cpu::rope_normal, Llama's adjacent pairs); with and without frequency
// divisors (rope_freqs.weight, Llama 3.1 scaling: random values in [1, 8] here); random rows,
// random positions up to 32k read from device memory, head_dim 64/128 (Qwen2, Llama 3.2-1B,
// Qwen3) and odd ones (2, 6, 200, 256), base 1e6 (Qwen), 5e5 (Llama 3) and 1e4, and in place.
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
#include "model/architecture.h"
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

struct Variant {
  RopeMode mode;
  bool divisors;  // rope_freqs divisors
  bool in_place;
};

std::string variant_name(const Variant& v) {
  return std::string(v.mode == RopeMode::NeoX ? "rope_neox" : "rope_normal") + (v.divisors ? " with divisors" : "") +
         (v.in_place ? " in place" : "");
}

// The offset in its head of the value element `in_head` is rotated with (its pair's other value).
int64_t partner(RopeMode mode, int64_t in_head, int64_t half) {
  if (mode == RopeMode::NeoX) return in_head < half ? in_head + half : in_head - half;
  return in_head % 2 == 0 ? in_head + 1 : in_head - 1;
}

void check_case(const Case& c, const Variant& v, uint32_t seed) {
  ThreadPool pool(2);
  const int64_t cols = c.n_heads * c.head_dim, half = c.head_dim / 2;
  const size_t n = static_cast<size_t>(c.rows * cols);
  const auto x = random_floats(n, seed);
  std::mt19937 rng(seed + 1);
  std::vector<int32_t> pos(static_cast<size_t>(c.rows));
  for (auto& p : pos) p = static_cast<int32_t>(rng() % 32768);
  pos[0] = 0;
  if (c.rows > 1) pos[1] = 32767;
  std::vector<float> div(static_cast<size_t>(half));
  std::uniform_real_distribution<float> ud(1.0f, 8.0f);
  for (auto& d : div) d = ud(rng);
  const float* divisors = v.divisors ? div.data() : nullptr;
  std::vector<float> want(n);
  const auto cpu_rope = v.mode == RopeMode::NeoX ? cpu::rope_neox : cpu::rope_normal;
  cpu_rope(x.data(), pos.data(), want.data(), c.rows, c.n_heads, c.head_dim, c.base, pool, divisors);

  auto dx = to_device(x);
  auto dpos = to_device(pos);
  auto ddiv = to_device(div);
  auto dy = poisoned(n * sizeof(float));
  float* y = v.in_place ? dx.as<float>() : dy.as<float>();
  const auto gpu_rope = v.mode == RopeMode::NeoX ? cuda::rope_neox : cuda::rope_normal;
  gpu_rope(dx.as<float>(), dpos.as<int32_t>(), y, c.rows, c.n_heads, c.head_dim, c.base, nullptr,
           v.divisors ? ddiv.as<float>() : nullptr);
  const auto got = to_host<float>(v.in_place ? dx : dy, n);

  const std::string what = variant_name(v) + " rows=" + std::to_string(c.rows) + " heads=" + std::to_string(c.n_heads) +
                           " head_dim=" + std::to_string(c.head_dim) + " base=" + std::to_string(c.base);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t in_head = static_cast<int64_t>(i) % c.head_dim;
    const size_t j = i - static_cast<size_t>(in_head) + static_cast<size_t>(partner(v.mode, in_head, half));
    const double tol = kRel * (std::fabs(x[i]) + std::fabs(x[j])) + 1e-30;
    if (!std::isfinite(got[i]) || std::fabs(static_cast<double>(got[i]) - want[i]) > tol)
      if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " elements out of tolerance";
}

const Case kCases[] = {Case{1, 14, 64, 1e6}, Case{1, 2, 64, 1e6},  Case{37, 14, 64, 1e6}, Case{5, 16, 128, 1e6},
                       Case{3, 3, 2, 1e4},   Case{9, 5, 6, 1e4},   Case{4, 2, 200, 1e6},  Case{2, 7, 256, 1e4},
                       Case{300, 2, 64, 1e6}, Case{6, 32, 64, 5e5}, Case{1, 8, 64, 5e5}};

}  // namespace

TEST(CudaRope, MatchesCpu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const Case& c : kCases) check_case(c, Variant{RopeMode::NeoX, false, false}, seed++);
}

TEST(CudaRope, NormalLayoutMatchesCpu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 100;
  for (const Case& c : kCases) check_case(c, Variant{RopeMode::Normal, false, false}, seed++);
}

TEST(CudaRope, FrequencyDivisorsMatchCpu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 200;
  for (RopeMode mode : {RopeMode::NeoX, RopeMode::Normal})
    for (const Case& c : kCases) check_case(c, Variant{mode, true, false}, seed++);
}

TEST(CudaRope, InPlace) {
  MINFER_REQUIRE_GPU();
  for (RopeMode mode : {RopeMode::NeoX, RopeMode::Normal})
    for (bool divisors : {false, true}) check_case(Case{11, 14, 64, 1e6}, Variant{mode, divisors, true}, 77);
}

TEST(CudaRope, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(4096);
  for (const char* name : {"rope_neox", "rope_normal"}) {
    const auto rope = std::string(name) == "rope_neox" ? cuda::rope_neox : cuda::rope_normal;
    for (int64_t head_dim : {int64_t{7}, int64_t{258}, int64_t{0}}) {
      try {
        rope(d.as<float>(), d.as<int32_t>(), d.as<float>(), 1, 1, head_dim, 1e6, nullptr, nullptr);
        ADD_FAILURE() << name << ": no error for head_dim " << head_dim;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    }
  }
}
