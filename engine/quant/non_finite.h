// Finding a NaN or Inf in a weight tensor's bytes without dequantizing it (issue 31, item 9).
// In the quantized types the quants are small integers and the sub-block scales of the K-quants
// 6-bit integers: only the f16 fields of each block (d, and m / dmin where the type has one) can
// be non-finite, and with them finite every value is (at most 65504 * 128 * 63 in magnitude).
// So a quantized tensor costs one 2-byte read per block; a float tensor is read whole.
#pragma once
#include <cstdint>
#include <optional>

#include "core/weight_type.h"

namespace minfer {

class ThreadPool;

struct NonFinite {
  int64_t index = 0;            // the element (float types) or the block (quantized types)
  const char* field = nullptr;  // quantized types: the block's field ("d", "m", "dmin")
  const char* role = nullptr;   // and what it is: "scale" (d, dmin) or "offset" (m)
  float value = 0;              // the non-finite value (nan, inf or -inf)
};

// The first non-finite value (float types) or block scale (quantized types) among the n
// elements of type t at data; nullopt when all are finite. n a multiple of the block size.
// With a pool the scan is split over its threads (the answer is the same: the lowest index).
// Error for an activation-only type (Q8_1, Q8_K), which Model::load refuses before.
std::optional<NonFinite> find_non_finite(WeightType t, const void* data, int64_t n, ThreadPool* pool = nullptr);

}  // namespace minfer
