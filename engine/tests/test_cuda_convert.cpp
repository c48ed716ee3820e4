// GPU float conversions (engine/cuda/convert.cu) against a bit-exact host reference:
//   f32 -> f16 / bf16: round to nearest, ties to even; overflow to inf; f16 subnormals kept.
//   f16 / bf16 -> f32: exact, checked exhaustively over all 65,536 bit patterns.
// Tolerance: zero (bit-identical), except that any NaN must map to some NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/convert.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16, round to nearest even.
uint16_t ref_f32_to_f16(float f) {
  const uint32_t x = bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;    // NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;   // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                         // below 2^-14: a binary16 subnormal (or 0)
    const double units = std::nearbyint(std::fabs(static_cast<double>(f)) * 16777216.0);  // in 2^-24, ties even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);  // round the 13 dropped bits, ties to even
  return static_cast<uint16_t>(sign | ((r - (112u << 23)) >> 13));
}

float ref_f16_to_f32(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = std::ldexp(m, -24);
  else if (e == 31) v = m ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else v = std::ldexp(m + 1024, e - 25);
  return static_cast<float>(h & 0x8000u ? -v : v);
}

uint16_t ref_f32_to_bf16(float f) {
  const uint32_t x = bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float ref_bf16_to_f32(uint16_t b) { return from_bits(static_cast<uint32_t>(b) << 16); }

bool is_nan16(uint16_t h, bool bf16) {
  return bf16 ? ((h & 0x7f80u) == 0x7f80u && (h & 0x7fu)) : ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu));
}

// Random values at several magnitudes (normal, f16 subnormal range, near f16 overflow) and
// the edge cases: ties, the overflow boundary, zeros, infinities, NaN.
std::vector<float> narrowing_inputs(size_t n_random) {
  std::vector<float> v;
  uint32_t seed = 1;
  for (float scale : {1.0f, 1e-5f, 2e-7f, 3e4f, 1e30f}) {
    const auto r = random_floats(n_random, seed++, scale);
    v.insert(v.end(), r.begin(), r.end());
  }
  const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN(), 65504.0f,
                         65519.99f, 65520.0f, -65520.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
                         std::ldexp(1.0f, -25), 3 * std::ldexp(1.0f, -25), std::ldexp(1.0f, -14),
                         std::ldexp(1.0f, -24) * 1023.5f, 1e-45f, from_bits(0x3f808000u), from_bits(0x3f818000u),
                         from_bits(0x7f7fffffu)};
  v.insert(v.end(), std::begin(edges), std::end(edges));
  return v;
}

template <class H>
void check_narrowing(void (*gpu)(const float*, H*, int64_t, cudaStream_t), uint16_t (*ref)(float), bool bf16,
                     const char* name) {
  const auto x = narrowing_inputs(1001);  // odd total: a ragged float4 tail
  for (size_t off : {0, 1}) {             // offset 1: the unaligned scalar path
    const size_t n = x.size() - off;
    auto dx = to_device(x);
    auto dy = poisoned((n + 1) * sizeof(H));
    gpu(dx.as<float>() + off, dy.as<H>() + off, static_cast<int64_t>(n), nullptr);
    const auto all = to_host<uint16_t>(dy, n + 1);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint16_t got = all[i + off], want = ref(x[i + off]);
      const bool ok = is_nan16(want, bf16) ? is_nan16(got, bf16) : got == want;
      if (!ok && bad++ < 5)
        ADD_FAILURE() << name << ": x=" << x[i + off] << " (0x" << std::hex << bits(x[i + off]) << ") got 0x" << got
                      << " want 0x" << want << std::dec;
    }
    EXPECT_EQ(bad, 0u) << name << " offset " << off;
  }
}

template <class H>
void check_widening(void (*gpu)(const H*, float*, int64_t, cudaStream_t), float (*ref)(uint16_t), const char* name) {
  std::vector<uint16_t> all(65536 + 3);  // every bit pattern, then 3 more: a ragged tail
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);  // odd multiplier: a permutation
  for (size_t off : {0, 1}) {
    const size_t n = all.size() - off;
    auto dx = to_device(all);
    auto dy = poisoned((n + 1) * sizeof(float));
    gpu(dx.as<H>() + off, dy.as<float>() + off, static_cast<int64_t>(n), nullptr);
    const auto got = to_host<float>(dy, n + 1);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const float want = ref(all[i + off]), g = got[i + off];
      const bool ok = std::isnan(want) ? std::isnan(g) : bits(g) == bits(want);
      if (!ok && bad++ < 5)
        ADD_FAILURE() << name << ": 0x" << std::hex << all[i + off] << std::dec << " got " << g << " want " << want;
    }
    EXPECT_EQ(bad, 0u) << name << " offset " << off;
  }
}

}  // namespace

TEST(CudaConvert, F32ToF16) {
  MINFER_REQUIRE_GPU();
  check_narrowing<__half>(cuda::f32_to_f16, ref_f32_to_f16, false, "f32_to_f16");
}

TEST(CudaConvert, F32ToBf16) {
  MINFER_REQUIRE_GPU();
  check_narrowing<__nv_bfloat16>(cuda::f32_to_bf16, ref_f32_to_bf16, true, "f32_to_bf16");
}

TEST(CudaConvert, F16ToF32Exhaustive) {
  MINFER_REQUIRE_GPU();
  check_widening<__half>(cuda::f16_to_f32, ref_f16_to_f32, "f16_to_f32");
}

TEST(CudaConvert, Bf16ToF32Exhaustive) {
  MINFER_REQUIRE_GPU();
  check_widening<__nv_bfloat16>(cuda::bf16_to_f32, ref_bf16_to_f32, "bf16_to_f32");
}

TEST(CudaConvert, BadArguments) {
  MINFER_REQUIRE_GPU();
  EXPECT_THROW(cuda::f32_to_f16(nullptr, nullptr, 4, nullptr), Error);
  auto d = poisoned(64);
  EXPECT_THROW(cuda::bf16_to_f32(d.as<__nv_bfloat16>(), d.as<float>(), -1, nullptr), Error);
}
