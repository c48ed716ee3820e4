// The one enum of weight/activation storage types, numbered as GGUF/ggml number them.
// Every table (dequantize, quantize, embed, matmul) is indexed by this enum.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace minfer {

enum class WeightType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,   // activation format
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,  // activation format
  BF16 = 30,
};

struct WeightTypeInfo {
  WeightType type;
  const char* name;      // "Q4_0", as GGUF tools print it
  int block_elems;       // elements per block (1 for float types)
  int block_bytes;       // bytes per block
  bool activation_only;  // Q8_1 / Q8_K: never stored as weights by converters
};

// nullptr when the id is not a type minfer supports.
const WeightTypeInfo* find_weight_type(uint32_t id);
const WeightTypeInfo& info(WeightType t);
inline const char* name(WeightType t) { return info(t).name; }
std::optional<WeightType> weight_type_from_name(std::string_view name);  // case-insensitive

// Bytes of one row of n elements; throws Error when n is not a multiple of the block size.
size_t row_bytes(WeightType t, int64_t n);
bool is_quantized(WeightType t);

}  // namespace minfer
