#include "quant/non_finite.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/blocks.h"

namespace minfer {
namespace {

// All exponent bits set: Inf or NaN, in each format.
inline bool f16_bad(uint16_t h) { return (h & 0x7c00) == 0x7c00; }
inline bool bf16_bad(uint16_t h) { return (h & 0x7f80) == 0x7f80; }
inline bool f32_bad(uint32_t u) { return (u & 0x7f800000) == 0x7f800000; }

struct ScaleField {
  const char* name;
  size_t offset;
  const char* role = "scale";
};
struct ScaleFields {
  ScaleField f[2];
  int n;
};

// The f16 fields of each block (blocks.h): the only bytes of a quantized tensor that can hold a
// non-finite number.
ScaleFields scale_fields(WeightType t) {
  switch (t) {
    case WeightType::Q4_0: return {{{"d", offsetof(BlockQ4_0, d)}}, 1};
    case WeightType::Q4_1: return {{{"d", offsetof(BlockQ4_1, d)}, {"m", offsetof(BlockQ4_1, m), "offset"}}, 2};
    case WeightType::Q5_0: return {{{"d", offsetof(BlockQ5_0, d)}}, 1};
    case WeightType::Q5_1: return {{{"d", offsetof(BlockQ5_1, d)}, {"m", offsetof(BlockQ5_1, m), "offset"}}, 2};
    case WeightType::Q8_0: return {{{"d", offsetof(BlockQ8_0, d)}}, 1};
    case WeightType::Q4_K: return {{{"d", offsetof(BlockQ4_K, d)}, {"dmin", offsetof(BlockQ4_K, dmin)}}, 2};
    case WeightType::Q5_K: return {{{"d", offsetof(BlockQ5_K, d)}, {"dmin", offsetof(BlockQ5_K, dmin)}}, 2};
    case WeightType::Q6_K: return {{{"d", offsetof(BlockQ6_K, d)}}, 1};
    default: fail("non-finite scan: ", name(t), " is not a weight type with block scales");
  }
}

inline uint16_t load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The first bad element of [b, e), or -1. Chunks are tested first with a branch-free OR the
// compiler vectorises; only a chunk that holds one is searched element by element.
template <class Load, class Bad>
int64_t first_bad_element(const uint8_t* p, int64_t b, int64_t e, size_t width, Load load, Bad bad) {
  constexpr int64_t kChunk = 4096;
  for (int64_t c = b; c < e; c += kChunk) {
    const int64_t ce = std::min(e, c + kChunk);
    unsigned any = 0;
    for (int64_t i = c; i < ce; ++i) any |= bad(load(p + static_cast<size_t>(i) * width));
    if (!any) continue;
    for (int64_t i = c; i < ce; ++i)
      if (bad(load(p + static_cast<size_t>(i) * width))) return i;
  }
  return -1;
}

// The first block of [b, e) with a bad scale, or -1.
int64_t first_bad_block(const uint8_t* p, int64_t b, int64_t e, size_t block_bytes, const ScaleFields& s) {
  for (int64_t k = b; k < e; ++k) {
    const uint8_t* blk = p + static_cast<size_t>(k) * block_bytes;
    for (int j = 0; j < s.n; ++j)
      if (f16_bad(load16(blk + s.f[j].offset))) return k;
  }
  return -1;
}

}  // namespace

std::optional<NonFinite> find_non_finite(WeightType t, const void* data, int64_t n, ThreadPool* pool) {
  const WeightTypeInfo& ti = info(t);
  if (ti.activation_only) fail("non-finite scan: ", ti.name, " is an activation format, not a weight type");
  const auto* p = static_cast<const uint8_t*>(data);
  const bool quantized = ti.block_elems > 1;
  const ScaleFields fields = quantized ? scale_fields(t) : ScaleFields{};
  const int64_t units = n / ti.block_elems;  // elements or blocks
  auto scan = [&](int64_t b, int64_t e) -> int64_t {
    if (quantized) return first_bad_block(p, b, e, static_cast<size_t>(ti.block_bytes), fields);
    if (t == WeightType::F32) return first_bad_element(p, b, e, 4, load32, f32_bad);
    return first_bad_element(p, b, e, 2, load16, t == WeightType::F16 ? f16_bad : bf16_bad);
  };

  int64_t first = -1;
  if (pool && pool->size() > 1) {
    // Each chunk keeps the lowest bad index seen so far; chunks past it need not look.
    std::atomic<int64_t> best{std::numeric_limits<int64_t>::max()};
    const int64_t grain = quantized ? (int64_t{1} << 14) : (int64_t{1} << 18);
    pool->parallel_for(units, grain, [&](int64_t b, int64_t e, int) {
      if (b >= best.load(std::memory_order_relaxed)) return;
      const int64_t k = scan(b, e);
      if (k < 0) return;
      int64_t cur = best.load();
      while (k < cur && !best.compare_exchange_weak(cur, k)) {
      }
    });
    if (best.load() != std::numeric_limits<int64_t>::max()) first = best.load();
  } else {
    first = scan(0, units);
  }
  if (first < 0) return std::nullopt;

  NonFinite out;
  out.index = first;
  const uint8_t* at = p + static_cast<size_t>(first) * static_cast<size_t>(ti.block_bytes);
  if (quantized) {
    for (int j = 0; j < fields.n; ++j) {
      const uint16_t h = load16(at + fields.f[j].offset);
      if (f16_bad(h)) {
        out.field = fields.f[j].name;
        out.role = fields.f[j].role;
        out.value = fp16_to_f32(h);
        break;
      }
    }
  } else if (t == WeightType::F32) {
    std::memcpy(&out.value, at, 4);
  } else {
    out.value = t == WeightType::F16 ? fp16_to_f32(load16(at)) : bf16_to_f32(load16(at));
  }
  return out;
}

}  // namespace minfer
