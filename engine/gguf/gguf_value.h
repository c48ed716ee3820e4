// A GGUF metadata value: scalar, string or (nested) array.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace minfer {

enum class GGUFValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* gguf_value_type_name(GGUFValueType t);  // "UINT8" ...; "unknown" for bad ids
bool gguf_value_type_valid(uint32_t id);
// Levels of arrays one value may have (an array of arrays is 2); deeper files are refused.
// 4, as in the Hugging Face GGUF reader, so that every file written here reads there too.
inline constexpr int kGGUFMaxArrayNesting = 4;

struct GGUFValue {
  GGUFValueType type = GGUFValueType::UINT32;
  // Scalars are kept in the widest member of their kind.
  uint64_t u = 0;   // UINT8..UINT64, BOOL
  int64_t i = 0;    // INT8..INT64
  double f = 0;     // FLOAT32, FLOAT64
  std::string s;    // STRING
  GGUFValueType elem_type = GGUFValueType::UINT8;  // ARRAY
  // An ARRAY built in code holds its elements in `arr`. One read from a file is a view of its
  // encoded elements in the mapped file instead (`arr` empty, `encoded` set), checked when the
  // file was opened and decoded only when read: an array minfer does not use costs no memory.
  // A view is valid while the GGUFFile it came from lives.
  std::vector<GGUFValue> arr;
  struct Encoded {
    const uint8_t* data = nullptr;
    size_t bytes = 0;
    uint64_t count = 0;
  } encoded;

  static GGUFValue u8(uint8_t v);
  static GGUFValue i8(int8_t v);
  static GGUFValue u16(uint16_t v);
  static GGUFValue i16(int16_t v);
  static GGUFValue u32(uint32_t v);
  static GGUFValue i32(int32_t v);
  static GGUFValue u64(uint64_t v);
  static GGUFValue i64(int64_t v);
  static GGUFValue f32(float v);
  static GGUFValue f64(double v);
  static GGUFValue boolean(bool v);
  static GGUFValue str(std::string v);
  // An array of `elem_type`; every element must have that type (checked by the writer).
  static GGUFValue array(GGUFValueType elem_type, std::vector<GGUFValue> elems);
  static GGUFValue str_array(const std::vector<std::string>& v);
  static GGUFValue i32_array(const std::vector<int32_t>& v);
  static GGUFValue f32_array(const std::vector<float>& v);
  // A view of `count` encoded elements (the reader has checked that they fill `bytes` exactly).
  static GGUFValue encoded_array(GGUFValueType elem_type, const uint8_t* data, size_t bytes, uint64_t count);

  // ARRAY: the number of elements, and each element in order (decoded one at a time from a view).
  uint64_t size() const;
  void for_each(const std::function<void(const GGUFValue&)>& f) const;
  std::vector<GGUFValue> elements() const;

  bool is_integer() const;  // UINT8..INT64 (not BOOL)
  bool is_float() const;    // FLOAT32, FLOAT64
  // Converting reads; throw Error (naming `what`) on a type that does not convert.
  // as_int also takes BOOL (0/1) and refuses a UINT64 above INT64_MAX; as_float takes integers.
  int64_t as_int(const std::string& what) const;
  double as_float(const std::string& what) const;
  bool as_bool(const std::string& what) const;  // BOOL only
  const std::string& as_string(const std::string& what) const;

  // Structural equality: type, element type and value (floats by bit pattern, so NaN == NaN).
  bool operator==(const GGUFValue& o) const;
  // Short human-readable form for messages and dumps: 42, "text", [3 x UINT8] ...
  std::string to_string() const;
};

}  // namespace minfer
