// A GGUF metadata value: scalar, string or (nested) array.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minfer {

enum class GGUFValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* gguf_value_type_name(GGUFValueType t);

struct GGUFValue {
  GGUFValueType type = GGUFValueType::UINT32;
  // Scalars are kept in the widest member of their kind.
  uint64_t u = 0;   // UINT8..UINT64, BOOL
  int64_t i = 0;    // INT8..INT64
  double f = 0;     // FLOAT32, FLOAT64
  std::string s;    // STRING
  GGUFValueType elem_type = GGUFValueType::UINT8;  // ARRAY
  std::vector<GGUFValue> arr;                      // ARRAY

  static GGUFValue u32(uint32_t v);
  static GGUFValue i32(int32_t v);
  static GGUFValue u64(uint64_t v);
  static GGUFValue f32(float v);
  static GGUFValue boolean(bool v);
  static GGUFValue str(std::string v);
  static GGUFValue str_array(const std::vector<std::string>& v);
  static GGUFValue i32_array(const std::vector<int32_t>& v);

  bool is_integer() const;
  bool is_float() const;
  // Converting reads; throw Error (naming `what`) on a type that does not convert.
  int64_t as_int(const std::string& what) const;
  double as_float(const std::string& what) const;
  const std::string& as_string(const std::string& what) const;
};

}  // namespace minfer
