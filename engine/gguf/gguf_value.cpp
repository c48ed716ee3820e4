#include "gguf/gguf_value.h"

#include <cstring>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "gguf/gguf_decode.h"

namespace minfer {

const char* gguf_value_type_name(GGUFValueType t) {
  switch (t) {
    case GGUFValueType::UINT8: return "UINT8";
    case GGUFValueType::INT8: return "INT8";
    case GGUFValueType::UINT16: return "UINT16";
    case GGUFValueType::INT16: return "INT16";
    case GGUFValueType::UINT32: return "UINT32";
    case GGUFValueType::INT32: return "INT32";
    case GGUFValueType::FLOAT32: return "FLOAT32";
    case GGUFValueType::BOOL: return "BOOL";
    case GGUFValueType::STRING: return "STRING";
    case GGUFValueType::ARRAY: return "ARRAY";
    case GGUFValueType::UINT64: return "UINT64";
    case GGUFValueType::INT64: return "INT64";
    case GGUFValueType::FLOAT64: return "FLOAT64";
  }
  return "unknown";
}

bool gguf_value_type_valid(uint32_t id) { return id <= static_cast<uint32_t>(GGUFValueType::FLOAT64); }

namespace {
GGUFValue unsigned_value(GGUFValueType t, uint64_t v) {
  GGUFValue r;
  r.type = t;
  r.u = v;
  return r;
}
GGUFValue signed_value(GGUFValueType t, int64_t v) {
  GGUFValue r;
  r.type = t;
  r.i = v;
  return r;
}
GGUFValue float_value(GGUFValueType t, double v) {
  GGUFValue r;
  r.type = t;
  r.f = v;
  return r;
}
bool is_unsigned(GGUFValueType t) {
  return t == GGUFValueType::UINT8 || t == GGUFValueType::UINT16 || t == GGUFValueType::UINT32 ||
         t == GGUFValueType::UINT64;
}
bool is_signed(GGUFValueType t) {
  return t == GGUFValueType::INT8 || t == GGUFValueType::INT16 || t == GGUFValueType::INT32 ||
         t == GGUFValueType::INT64;
}
}  // namespace

GGUFValue GGUFValue::u8(uint8_t v) { return unsigned_value(GGUFValueType::UINT8, v); }
GGUFValue GGUFValue::i8(int8_t v) { return signed_value(GGUFValueType::INT8, v); }
GGUFValue GGUFValue::u16(uint16_t v) { return unsigned_value(GGUFValueType::UINT16, v); }
GGUFValue GGUFValue::i16(int16_t v) { return signed_value(GGUFValueType::INT16, v); }
GGUFValue GGUFValue::u32(uint32_t v) { return unsigned_value(GGUFValueType::UINT32, v); }
GGUFValue GGUFValue::i32(int32_t v) { return signed_value(GGUFValueType::INT32, v); }
GGUFValue GGUFValue::u64(uint64_t v) { return unsigned_value(GGUFValueType::UINT64, v); }
GGUFValue GGUFValue::i64(int64_t v) { return signed_value(GGUFValueType::INT64, v); }
GGUFValue GGUFValue::f32(float v) { return float_value(GGUFValueType::FLOAT32, v); }
GGUFValue GGUFValue::f64(double v) { return float_value(GGUFValueType::FLOAT64, v); }
GGUFValue GGUFValue::boolean(bool v) { return unsigned_value(GGUFValueType::BOOL, v ? 1 : 0); }

GGUFValue GGUFValue::str(std::string v) {
  GGUFValue r;
  r.type = GGUFValueType::STRING;
  r.s = std::move(v);
  return r;
}

GGUFValue GGUFValue::array(GGUFValueType elem_type, std::vector<GGUFValue> elems) {
  GGUFValue r;
  r.type = GGUFValueType::ARRAY;
  r.elem_type = elem_type;
  r.arr = std::move(elems);
  return r;
}

GGUFValue GGUFValue::str_array(const std::vector<std::string>& v) {
  std::vector<GGUFValue> e;
  e.reserve(v.size());
  for (const auto& x : v) e.push_back(str(x));
  return array(GGUFValueType::STRING, std::move(e));
}

GGUFValue GGUFValue::i32_array(const std::vector<int32_t>& v) {
  std::vector<GGUFValue> e;
  e.reserve(v.size());
  for (int32_t x : v) e.push_back(i32(x));
  return array(GGUFValueType::INT32, std::move(e));
}

GGUFValue GGUFValue::f32_array(const std::vector<float>& v) {
  std::vector<GGUFValue> e;
  e.reserve(v.size());
  for (float x : v) e.push_back(f32(x));
  return array(GGUFValueType::FLOAT32, std::move(e));
}

GGUFValue GGUFValue::encoded_array(GGUFValueType elem_type, const uint8_t* data, size_t bytes, uint64_t count) {
  GGUFValue r;
  r.type = GGUFValueType::ARRAY;
  r.elem_type = elem_type;
  r.encoded = {data, bytes, count};
  return r;
}

uint64_t GGUFValue::size() const { return encoded.data ? encoded.count : arr.size(); }

void GGUFValue::for_each(const std::function<void(const GGUFValue&)>& f) const {
  if (!encoded.data) {
    for (const auto& e : arr) f(e);
    return;
  }
  GGUFCursor c(encoded.data, encoded.bytes, "GGUF array");
  for (uint64_t k = 0; k < encoded.count; ++k) f(gguf_read_value(c, elem_type, 1));
}

std::vector<GGUFValue> GGUFValue::elements() const {
  if (!encoded.data) return arr;
  std::vector<GGUFValue> out;
  out.reserve(static_cast<size_t>(encoded.count));
  for_each([&](const GGUFValue& e) { out.push_back(e); });
  return out;
}

bool GGUFValue::is_integer() const { return is_unsigned(type) || is_signed(type); }
bool GGUFValue::is_float() const {
  return type == GGUFValueType::FLOAT32 || type == GGUFValueType::FLOAT64;
}

int64_t GGUFValue::as_int(const std::string& what) const {
  if (is_signed(type)) return i;
  if (is_unsigned(type) || type == GGUFValueType::BOOL) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(what, ": value ", u, " does not fit a signed 64-bit integer");
    return static_cast<int64_t>(u);
  }
  fail(what, " has type ", gguf_value_type_name(type), ", expected an integer");
}

double GGUFValue::as_float(const std::string& what) const {
  if (is_float()) return f;
  if (is_signed(type)) return static_cast<double>(i);
  if (is_unsigned(type)) return static_cast<double>(u);
  fail(what, " has type ", gguf_value_type_name(type), ", expected a number");
}

bool GGUFValue::as_bool(const std::string& what) const {
  if (type != GGUFValueType::BOOL)
    fail(what, " has type ", gguf_value_type_name(type), ", expected BOOL");
  return u != 0;
}

const std::string& GGUFValue::as_string(const std::string& what) const {
  if (type != GGUFValueType::STRING)
    fail(what, " has type ", gguf_value_type_name(type), ", expected STRING");
  return s;
}

bool GGUFValue::operator==(const GGUFValue& o) const {
  if (type != o.type) return false;
  if (is_unsigned(type) || type == GGUFValueType::BOOL) return u == o.u;
  if (is_signed(type)) return i == o.i;
  if (is_float()) return std::memcmp(&f, &o.f, sizeof f) == 0;
  if (type == GGUFValueType::STRING) return s == o.s;
  if (type == GGUFValueType::ARRAY)
    return elem_type == o.elem_type && size() == o.size() && elements() == o.elements();
  return true;  // an invalid type id: nothing else to compare
}

std::string GGUFValue::to_string() const {
  std::ostringstream os;
  if (type == GGUFValueType::BOOL) {
    os << (u ? "true" : "false");
  } else if (is_unsigned(type)) {
    os << u;
  } else if (is_signed(type)) {
    os << i;
  } else if (is_float()) {
    os << f;
  } else if (type == GGUFValueType::STRING) {
    constexpr size_t kMax = 60;  // keep messages short: long strings are cut
    os << '"' << s.substr(0, kMax) << (s.size() > kMax ? "...\"" : "\"");
  } else if (type == GGUFValueType::ARRAY) {
    os << '[' << size() << " x " << gguf_value_type_name(elem_type) << ']';
  } else {
    os << "<type " << static_cast<uint32_t>(type) << '>';
  }
  return os.str();
}

}  // namespace minfer
