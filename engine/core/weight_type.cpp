#include "core/weight_type.h"

#include <cctype>

#include "core/error.h"

namespace minfer {
namespace {
constexpr WeightTypeInfo kTypes[] = {
    {WeightType::F32, "F32", 1, 4, false},     {WeightType::F16, "F16", 1, 2, false},
    {WeightType::Q4_0, "Q4_0", 32, 18, false}, {WeightType::Q4_1, "Q4_1", 32, 20, false},
    {WeightType::Q5_0, "Q5_0", 32, 22, false}, {WeightType::Q5_1, "Q5_1", 32, 24, false},
    {WeightType::Q8_0, "Q8_0", 32, 34, false}, {WeightType::Q8_1, "Q8_1", 32, 36, true},
    {WeightType::Q4_K, "Q4_K", 256, 144, false}, {WeightType::Q5_K, "Q5_K", 256, 176, false},
    {WeightType::Q6_K, "Q6_K", 256, 210, false}, {WeightType::Q8_K, "Q8_K", 256, 292, true},
    {WeightType::BF16, "BF16", 1, 2, false},
};
}  // namespace

const WeightTypeInfo* find_weight_type(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return &t;
  return nullptr;
}

const WeightTypeInfo& info(WeightType t) {
  const WeightTypeInfo* i = find_weight_type(static_cast<uint32_t>(t));
  if (!i) fail("unknown weight type id ", static_cast<uint32_t>(t));
  return *i;
}

std::optional<WeightType> weight_type_from_name(std::string_view n) {
  for (const auto& t : kTypes) {
    std::string_view tn = t.name;
    if (tn.size() != n.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < n.size(); ++i)
      if (std::toupper(static_cast<unsigned char>(n[i])) != tn[i]) eq = false;
    if (eq) return t.type;
  }
  return std::nullopt;
}

size_t row_bytes(WeightType t, int64_t n) {
  const auto& i = info(t);
  if (n < 0 || n % i.block_elems != 0)
    fail("row of ", n, " elements is not a multiple of ", i.name, "'s block size ", i.block_elems);
  return static_cast<size_t>(n / i.block_elems) * static_cast<size_t>(i.block_bytes);
}

bool is_quantized(WeightType t) { return info(t).block_elems > 1; }

}  // namespace minfer
