#include "gguf/gguf_decode.h"

namespace minfer {
namespace {

// Bytes the smallest encoding of one value of type t takes; 0 for an invalid type.
size_t min_encoded_size(GGUFValueType t) {
  switch (t) {
    case GGUFValueType::UINT8: case GGUFValueType::INT8: case GGUFValueType::BOOL: return 1;
    case GGUFValueType::UINT16: case GGUFValueType::INT16: return 2;
    case GGUFValueType::UINT32: case GGUFValueType::INT32: case GGUFValueType::FLOAT32: return 4;
    case GGUFValueType::UINT64: case GGUFValueType::INT64: case GGUFValueType::FLOAT64: return 8;
    case GGUFValueType::STRING: return 8;   // the length
    case GGUFValueType::ARRAY: return 12;   // element type + count
  }
  return 0;
}

bool fixed_size(GGUFValueType t) { return t != GGUFValueType::STRING && t != GGUFValueType::ARRAY; }

GGUFValue read_array(GGUFCursor& c, int depth) {
  uint32_t elem_id = c.read<uint32_t>("array element type");
  if (!gguf_value_type_valid(elem_id)) c.fail_here("unknown array element type id ", elem_id);
  auto elem = static_cast<GGUFValueType>(elem_id);
  uint64_t count = c.read<uint64_t>("array length");
  size_t min_size = min_encoded_size(elem);
  if (count > c.remaining() / min_size)
    c.fail_here("array of ", count, " ", gguf_value_type_name(elem), " elements cannot fit in the ",
                c.remaining(), " bytes left in the file");
  if (elem == GGUFValueType::ARRAY && depth + 2 > kGGUFMaxArrayNesting)
    c.fail_here("arrays nested deeper than ", kGGUFMaxArrayNesting, " levels");
  const size_t start = c.pos();
  if (fixed_size(elem)) {
    c.skip(static_cast<size_t>(count) * min_size, "array elements");  // fits: checked above
  } else if (elem == GGUFValueType::STRING) {
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t len = c.read<uint64_t>("string value");
      if (len > c.remaining())
        c.fail_here("string value length ", len, " exceeds the ", c.remaining(), " bytes left in the file");
      c.skip(static_cast<size_t>(len), "string value");
    }
  } else {
    for (uint64_t k = 0; k < count; ++k) read_array(c, depth + 1);
  }
  return GGUFValue::encoded_array(elem, c.data_at(start), c.pos() - start, count);
}

}  // namespace

GGUFValue gguf_read_value(GGUFCursor& c, GGUFValueType type, int depth) {
  switch (type) {
    case GGUFValueType::UINT8: return GGUFValue::u8(c.read<uint8_t>("UINT8 value"));
    case GGUFValueType::INT8: return GGUFValue::i8(c.read<int8_t>("INT8 value"));
    case GGUFValueType::UINT16: return GGUFValue::u16(c.read<uint16_t>("UINT16 value"));
    case GGUFValueType::INT16: return GGUFValue::i16(c.read<int16_t>("INT16 value"));
    case GGUFValueType::UINT32: return GGUFValue::u32(c.read<uint32_t>("UINT32 value"));
    case GGUFValueType::INT32: return GGUFValue::i32(c.read<int32_t>("INT32 value"));
    case GGUFValueType::UINT64: return GGUFValue::u64(c.read<uint64_t>("UINT64 value"));
    case GGUFValueType::INT64: return GGUFValue::i64(c.read<int64_t>("INT64 value"));
    case GGUFValueType::FLOAT32: return GGUFValue::f32(c.read<float>("FLOAT32 value"));
    case GGUFValueType::FLOAT64: return GGUFValue::f64(c.read<double>("FLOAT64 value"));
    case GGUFValueType::BOOL: return GGUFValue::boolean(c.read<uint8_t>("BOOL value") != 0);
    case GGUFValueType::STRING: return GGUFValue::str(c.read_string("string value"));
    case GGUFValueType::ARRAY: return read_array(c, depth);
  }
  c.fail_here("unknown value type id ", static_cast<uint32_t>(type));
}

}  // namespace minfer
