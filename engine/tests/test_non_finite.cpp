// find_non_finite (quant/non_finite.h) against the reference dequantizer: on random bytes of
// every weight type, the block (or element) it names is the first one whose dequantized values
// hold a NaN or Inf, and it names none when they are all finite. That is the claim that lets
// Model::load read only the block scales of a quantized matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "core/weight_type.h"
#include "quant/non_finite.h"
#include "quant/quant.h"

using namespace minfer;

namespace {

const WeightType kWeightTypes[] = {WeightType::F32,  WeightType::F16,  WeightType::BF16, WeightType::Q4_0,
                                   WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1, WeightType::Q8_0,
                                   WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K};

// The first block (element, for float types) whose dequantized values are not all finite; -1.
int64_t first_non_finite_by_dequant(WeightType t, const std::vector<uint8_t>& b, int64_t n) {
  const WeightTypeInfo& ti = info(t);
  std::vector<float> v(static_cast<size_t>(ti.block_elems));
  for (int64_t k = 0; k < n / ti.block_elems; ++k) {
    dequantize_row(t, b.data() + static_cast<size_t>(k) * ti.block_bytes, v.data(), ti.block_elems);
    for (float x : v)
      if (!std::isfinite(x)) return k;
  }
  return -1;
}

// Random bytes where every 2-byte word has a chance of 1 in `rare` of being an f16 NaN or Inf
// (all exponent bits set), so most tensors hold none or one.
std::vector<uint8_t> random_bytes(std::mt19937_64& rng, size_t n, int rare) {
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  for (size_t i = 0; i + 1 < n; i += 2) {
    uint16_t w;
    std::memcpy(&w, &b[i], 2);
    w = rng() % static_cast<uint64_t>(rare) == 0 ? static_cast<uint16_t>(w | 0x7c00) : static_cast<uint16_t>(w & ~0x4000);
    std::memcpy(&b[i], &w, 2);
  }
  return b;
}

}  // namespace

TEST(NonFinite, NamesTheFirstBlockTheDequantizerFindsNonFinite) {
  std::mt19937_64 rng(31);
  ThreadPool pool(3);
  int found = 0, clean = 0;
  for (WeightType t : kWeightTypes) {
    const WeightTypeInfo& ti = info(t);
    for (int c = 0; c < 200; ++c) {
      const int64_t blocks = 1 + static_cast<int64_t>(rng() % 300);
      const int64_t n = blocks * ti.block_elems;
      // About one planted word per tensor among its scales (or values), so that about half the
      // tensors hold none. An f32 or bf16 planted word is non-finite 1 time in 8 only (its
      // exponent has 3 more bits than the planted 5).
      const bool wide_exponent = t == WeightType::F32 || t == WeightType::BF16;
      const int rare = std::max(1, static_cast<int>(1.4 * static_cast<double>(blocks) / (wide_exponent ? 8 : 1)));
      const auto b = random_bytes(rng, row_bytes(t, n), rare);
      const int64_t want = first_non_finite_by_dequant(t, b, n);
      const auto got = find_non_finite(t, b.data(), n);
      ASSERT_EQ(got ? got->index : -1, want) << ti.name << " case " << c;
      const auto on_pool = find_non_finite(t, b.data(), n, &pool);
      ASSERT_EQ(on_pool ? on_pool->index : -1, want) << ti.name << " case " << c << " on a pool";
      if (got) {
        EXPECT_FALSE(std::isfinite(got->value)) << ti.name;
        EXPECT_EQ(got->field == nullptr, ti.block_elems == 1) << ti.name;
        ++found;
      } else {
        ++clean;
      }
    }
  }
  // Both answers must be exercised for the comparison to mean anything.
  EXPECT_GT(found, 500);
  EXPECT_GT(clean, 500);
}

TEST(NonFinite, APoolNamesTheLowestOfManyAcrossChunks) {
  // 2^20 f16 values: several of the pool's chunks; NaNs near the end of one chunk and early in a
  // later one. Whichever thread finds which first, the lowest index is the answer.
  const int64_t n = int64_t{1} << 20;
  std::vector<uint16_t> h(static_cast<size_t>(n), 0x3c00);  // 1.0
  h[900000] = 0x7c00;
  h[300001] = 0xfe01;  // a negative NaN with a payload
  h[1000] = 0x7bff;    // 65504: finite
  ThreadPool pool(4);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    const auto got = find_non_finite(WeightType::F16, h.data(), n, p);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->index, 300001);
    EXPECT_TRUE(std::isnan(got->value));
  }
}

TEST(NonFinite, NamesTheFieldOfTheBlock) {
  struct Case {
    WeightType t;
    size_t offset;
    const char* field;
    const char* role;
  };
  // Offsets as blocks.h lays them out.
  const Case cases[] = {{WeightType::Q4_0, 0, "d", "scale"},  {WeightType::Q4_1, 2, "m", "offset"},
                        {WeightType::Q5_1, 0, "d", "scale"},  {WeightType::Q5_1, 2, "m", "offset"},
                        {WeightType::Q4_K, 2, "dmin", "scale"}, {WeightType::Q5_K, 0, "d", "scale"},
                        {WeightType::Q6_K, 208, "d", "scale"}};
  for (const Case& c : cases) {
    const WeightTypeInfo& ti = info(c.t);
    std::vector<uint8_t> b(static_cast<size_t>(ti.block_bytes) * 4, 0);  // zeros: every scale 0, finite
    ASSERT_FALSE(find_non_finite(c.t, b.data(), 4 * ti.block_elems)) << ti.name;
    const uint16_t inf = 0x7c00;
    std::memcpy(&b[2 * static_cast<size_t>(ti.block_bytes) + c.offset], &inf, 2);
    const auto got = find_non_finite(c.t, b.data(), 4 * ti.block_elems);
    ASSERT_TRUE(got) << ti.name;
    EXPECT_EQ(got->index, 2) << ti.name;
    EXPECT_STREQ(got->field, c.field) << ti.name;
    EXPECT_STREQ(got->role, c.role) << ti.name;
    EXPECT_EQ(got->value, INFINITY) << ti.name;
  }
}
