// GGUF writer -> reader round trips: every metadata value type (incl. nested arrays and
// extreme values), every WeightType tensor, several alignments, the file and memory paths,
// and the typed getters with their error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <malloc.h>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace minfer {
namespace {

namespace fs = std::filesystem;
using VT = GGUFValueType;

std::string temp_path(const std::string& name) {
  fs::path dir = fs::path(MINFER_BINARY_DIR) / "test-tmp" / "gguf_roundtrip";
  fs::create_directories(dir);
  return (dir / name).string();
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// A random value of scalar type t (never all-zero, so a dropped value shows).
GGUFValue random_scalar(VT t, std::mt19937_64& rng) {
  uint64_t r = rng() | 1;
  switch (t) {
    case VT::UINT8: return GGUFValue::u8(static_cast<uint8_t>(r));
    case VT::INT8: return GGUFValue::i8(static_cast<int8_t>(r));
    case VT::UINT16: return GGUFValue::u16(static_cast<uint16_t>(r));
    case VT::INT16: return GGUFValue::i16(static_cast<int16_t>(r));
    case VT::UINT32: return GGUFValue::u32(static_cast<uint32_t>(r));
    case VT::INT32: return GGUFValue::i32(static_cast<int32_t>(r));
    case VT::UINT64: return GGUFValue::u64(r);
    case VT::INT64: return GGUFValue::i64(static_cast<int64_t>(r));
    case VT::FLOAT32:
      return GGUFValue::f32(std::uniform_real_distribution<float>(-1e6f, 1e6f)(rng));
    case VT::FLOAT64:
      return GGUFValue::f64(std::uniform_real_distribution<double>(-1e300, 1e300)(rng));
    case VT::BOOL: return GGUFValue::boolean(r & 2);
    case VT::STRING: {
      std::string s(rng() % 40 + 1, '\0');
      for (auto& ch : s) ch = static_cast<char>(rng());  // any bytes, NUL and invalid UTF-8 too
      return GGUFValue::str(s);
    }
    default: break;
  }
  ADD_FAILURE() << "not a scalar type";
  return {};
}

const VT kScalarTypes[] = {VT::UINT8, VT::INT8,  VT::UINT16,  VT::INT16,  VT::UINT32,
                           VT::INT32, VT::UINT64, VT::INT64, VT::FLOAT32, VT::FLOAT64,
                           VT::BOOL,  VT::STRING};

// Metadata with every scalar type, extremes, arrays of every element type and nested arrays.
std::vector<std::pair<std::string, GGUFValue>> rich_metadata(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::string, GGUFValue>> kv;
  for (VT t : kScalarTypes) {
    kv.emplace_back(std::string("scalar.") + gguf_value_type_name(t), random_scalar(t, rng));
    std::vector<GGUFValue> elems;
    size_t n = rng() % 17 + 1;
    for (size_t k = 0; k < n; ++k) elems.push_back(random_scalar(t, rng));
    kv.emplace_back(std::string("array.") + gguf_value_type_name(t),
                    GGUFValue::array(t, std::move(elems)));
  }
  kv.emplace_back("extreme.u64_max", GGUFValue::u64(std::numeric_limits<uint64_t>::max()));
  kv.emplace_back("extreme.i64_min", GGUFValue::i64(std::numeric_limits<int64_t>::min()));
  kv.emplace_back("extreme.i8_min", GGUFValue::i8(-128));
  kv.emplace_back("extreme.f32_nan", GGUFValue::f32(std::numeric_limits<float>::quiet_NaN()));
  kv.emplace_back("extreme.f32_neg_zero", GGUFValue::f32(-0.0f));
  kv.emplace_back("extreme.f64_inf", GGUFValue::f64(-std::numeric_limits<double>::infinity()));
  kv.emplace_back("extreme.f32_denormal", GGUFValue::f32(1e-40f));
  kv.emplace_back("extreme.empty_string", GGUFValue::str(""));
  kv.emplace_back("extreme.utf8", GGUFValue::str("Ġhello 你好 👩‍💻 <|im_start|>"));
  kv.emplace_back("extreme.empty_array", GGUFValue::array(VT::INT32, {}));
  kv.emplace_back("", GGUFValue::str("an empty key is legal"));
  // Array of arrays whose inner element types differ (each inner array has its own header),
  // and an array nested to the deepest level the format allows here.
  kv.emplace_back("nested.mixed",
                  GGUFValue::array(VT::ARRAY, {GGUFValue::i32_array({1, -2, 3}),
                                               GGUFValue::str_array({"a b", "", "c"}),
                                               GGUFValue::array(VT::ARRAY, {}),
                                               GGUFValue::f32_array({0.5f, -1.25f})}));
  GGUFValue deep = GGUFValue::array(VT::UINT16, {GGUFValue::u16(7), GGUFValue::u16(65535)});
  for (int level = 1; level < kGGUFMaxArrayNesting; ++level)
    deep = GGUFValue::array(VT::ARRAY, {deep, GGUFValue::array(VT::BOOL, {})});
  kv.emplace_back("nested.deepest", deep);
  return kv;
}

void expect_same_metadata(const GGUFFile& f,
                          const std::vector<std::pair<std::string, GGUFValue>>& want) {
  ASSERT_EQ(f.metadata().size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(f.metadata()[k].first, want[k].first) << "order differs at " << k;
    EXPECT_TRUE(f.metadata()[k].second == want[k].second)
        << "key '" << want[k].first << "': read " << f.metadata()[k].second.to_string()
        << ", wrote " << want[k].second.to_string();
  }
}

TEST(GGUFRoundTrip, EveryValueTypeThroughFileAndMemory) {
  auto kv = rich_metadata(42);
  GGUFWriter w;
  for (const auto& [k, v] : kv) w.set(k, v);
  std::string path = temp_path("values.gguf");
  w.write(path);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  auto f = GGUFFile::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_TRUE(f->tensors().empty());
  expect_same_metadata(*f, kv);

  std::vector<uint8_t> bytes = w.to_bytes();
  EXPECT_EQ(bytes, read_all(path)) << "to_bytes() and write() disagree";
  auto m = GGUFFile::from_memory(bytes.data(), bytes.size(), "mem.gguf");
  expect_same_metadata(*m, kv);
  EXPECT_EQ(m->path(), "mem.gguf");
}

TEST(GGUFRoundTrip, Float32KeepsItsExactBits) {
  std::mt19937_64 rng(7);
  GGUFWriter w;
  std::vector<float> want;
  for (int k = 0; k < 200; ++k) {
    uint32_t bits = static_cast<uint32_t>(rng());
    float x;
    std::memcpy(&x, &bits, 4);
    if (std::isnan(x)) x = 1.5f;  // NaN payloads are not promised to survive float<->double
    want.push_back(x);
  }
  w.set("floats", GGUFValue::f32_array(want));
  auto bytes = w.to_bytes();
  auto f = GGUFFile::from_memory(bytes.data(), bytes.size(), "f.gguf");
  std::vector<float> got = f->get_float_array("floats");
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0);
}

// Every WeightType, several shapes per type, at several alignments.
TEST(GGUFRoundTrip, EveryWeightTypeTensor) {
  const WeightType kTypes[] = {WeightType::F32,  WeightType::F16,  WeightType::BF16,
                               WeightType::Q4_0, WeightType::Q4_1, WeightType::Q5_0,
                               WeightType::Q5_1, WeightType::Q8_0, WeightType::Q8_1,
                               WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K,
                               WeightType::Q8_K};
  for (uint64_t alignment : {uint64_t{32}, uint64_t{1}, uint64_t{64}, uint64_t{4096}}) {
    SCOPED_TRACE("alignment " + std::to_string(alignment));
    std::mt19937_64 rng(alignment);
    GGUFWriter w;
    if (alignment != 32) w.set_alignment(alignment);
    w.set("general.architecture", GGUFValue::str("qwen2"));
    struct Want {
      std::string name;
      std::vector<int64_t> ne;
      WeightType type;
      std::vector<uint8_t> data;
    };
    std::vector<Want> want;
    for (WeightType t : kTypes) {
      const auto& ti = info(t);
      int64_t row = ti.block_elems * static_cast<int64_t>(rng() % 3 + 1);
      std::vector<std::vector<int64_t>> shapes = {{row}, {row, 3}, {row, 2, 3}, {row, 1, 2, 2}};
      for (size_t s = 0; s < shapes.size(); ++s) {
        int64_t n = 1;
        for (int64_t d : shapes[s]) n *= d;
        std::vector<uint8_t> data(static_cast<size_t>(n / ti.block_elems * ti.block_bytes));
        for (auto& b : data) b = static_cast<uint8_t>(rng());
        std::string name = std::string("blk.") + std::to_string(s) + "." + ti.name + ".weight";
        want.push_back({name, shapes[s], t, data});
        w.add_tensor(name, shapes[s], t, data);
      }
    }
    std::string path = temp_path("tensors_" + std::to_string(alignment) + ".gguf");
    w.write(path);
    auto f = GGUFFile::open(path);
    EXPECT_EQ(f->alignment(), alignment);
    EXPECT_EQ(f->data_offset() % alignment, 0u);
    EXPECT_EQ(f->get_string("general.architecture"), "qwen2");
    ASSERT_EQ(f->tensors().size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const GGUFTensorInfo& t = f->tensors()[k];
      SCOPED_TRACE(want[k].name);
      EXPECT_EQ(t.name, want[k].name);
      EXPECT_EQ(t.ne, want[k].ne);
      EXPECT_EQ(t.type, want[k].type);
      EXPECT_EQ(t.offset % alignment, 0u);
      ASSERT_EQ(t.nbytes, want[k].data.size());
      // data points at data section + offset: the same distance apart as the offsets.
      EXPECT_EQ(static_cast<uint64_t>(t.data - f->tensors()[0].data),
                t.offset - f->tensors()[0].offset);
      EXPECT_EQ(std::memcmp(t.data, want[k].data.data(), t.nbytes), 0);
      EXPECT_EQ(&f->tensor(want[k].name), &t);
      EXPECT_EQ(t.n_rows() * t.ne[0], t.n_elements());
    }
  }
}

TEST(GGUFRoundTrip, Version2FilesAreRead) {
  GGUFWriter w;
  w.set("k", GGUFValue::i32(-5));
  w.add_tensor("t", {32}, WeightType::Q8_0, std::vector<uint8_t>(34, 3));
  auto bytes = w.to_bytes();
  bytes[4] = 2;  // v2 has the same layout as v3 (v3 only added big-endian files)
  auto f = GGUFFile::from_memory(bytes.data(), bytes.size(), "v2.gguf");
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->get_int("k"), -5);
  EXPECT_EQ(f->tensor("t").data[0], 3);
}

TEST(GGUFRoundTrip, TypedGettersConvertAndExplain) {
  GGUFWriter w;
  w.set("u32", GGUFValue::u32(4864));
  w.set("f32", GGUFValue::f32(1e-6f));
  w.set("u64_big", GGUFValue::u64(std::numeric_limits<uint64_t>::max()));
  w.set("flag", GGUFValue::boolean(true));
  w.set("name", GGUFValue::str("Qwen2.5-0.5B"));
  w.set("tokens", GGUFValue::str_array({"!", "\"", "Ġthe"}));
  w.set("types", GGUFValue::array(VT::UINT8, {GGUFValue::u8(1), GGUFValue::u8(3)}));
  w.set("ints", GGUFValue::i32_array({151643, -1}));
  auto bytes = w.to_bytes();
  auto f = GGUFFile::from_memory(bytes.data(), bytes.size(), "m.gguf");

  EXPECT_EQ(f->get_int("u32"), 4864);
  EXPECT_DOUBLE_EQ(f->get_float("u32"), 4864.0);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("f32")), 1e-6f);
  EXPECT_TRUE(f->get_bool("flag"));
  EXPECT_EQ(f->get_int("flag"), 1);
  EXPECT_EQ(f->get_string("name"), "Qwen2.5-0.5B");
  EXPECT_EQ(f->get_string_array("tokens"), (std::vector<std::string>{"!", "\"", "Ġthe"}));
  EXPECT_EQ(f->get_int_array("types"), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(f->get_int_array("ints"), (std::vector<int64_t>{151643, -1}));
  EXPECT_EQ(f->get_int_or("absent", 77), 77);
  EXPECT_EQ(f->get_int_or("u32", 77), 4864);
  EXPECT_DOUBLE_EQ(f->get_float_or("absent", 0.25), 0.25);
  EXPECT_FALSE(f->get_bool_or("absent", false));
  EXPECT_EQ(f->get_string_or("absent", "x"), "x");
  EXPECT_EQ(f->find("absent"), nullptr);
  EXPECT_EQ(f->find_tensor("absent"), nullptr);

  auto expect_error = [](auto fn, const std::string& msg) {
    try {
      fn();
      ADD_FAILURE() << "expected Error: " << msg;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), msg);
    }
  };
  expect_error([&] { f->get_int("absent"); }, "m.gguf: metadata key 'absent' missing");
  expect_error([&] { f->get_int("name"); },
               "m.gguf: metadata key 'name' has type STRING, expected an integer");
  expect_error([&] { f->get_string("u32"); },
               "m.gguf: metadata key 'u32' has type UINT32, expected STRING");
  expect_error([&] { f->get_float("tokens"); },
               "m.gguf: metadata key 'tokens' has type ARRAY, expected a number");
  expect_error([&] { f->get_bool("u32"); },
               "m.gguf: metadata key 'u32' has type UINT32, expected BOOL");
  expect_error([&] { f->get_int("u64_big"); },
               "m.gguf: metadata key 'u64_big': value 18446744073709551615 does not fit a "
               "signed 64-bit integer");
  expect_error([&] { f->get_string_array("ints"); },
               "m.gguf: metadata key 'ints' is an array of INT32, expected an array of STRING");
  expect_error([&] { f->get_int_array("tokens"); },
               "m.gguf: metadata key 'tokens' is an array of STRING, expected an array of "
               "integers");
  expect_error([&] { f->get_string_array("name"); },
               "m.gguf: metadata key 'name' has type STRING, expected an array of STRING");
  expect_error([&] { f->get_bool_or("name", true); },
               "m.gguf: metadata key 'name' has type STRING, expected BOOL");
  expect_error([&] { f->tensor("output.weight"); }, "m.gguf: tensor 'output.weight' missing");
}

// Heap bytes in use (glibc): small blocks plus mmapped ones.
size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// A GGUF image by hand (no tensors): the writer would need a GGUFValue per element to build it.
std::vector<uint8_t> image_with_big_arrays(uint64_t n_bytes, uint64_t n_strings) {
  std::vector<uint8_t> b;
  auto put = [&](auto v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
  };
  auto key = [&](const std::string& k) {
    put(uint64_t{k.size()});
    b.insert(b.end(), k.begin(), k.end());
  };
  put(uint32_t{0x46554747});
  put(uint32_t{3});
  put(uint64_t{0});  // tensors
  put(uint64_t{3});  // keys
  key("x.bytes");
  put(uint32_t{9});
  put(uint32_t{0});  // UINT8
  put(n_bytes);
  for (uint64_t k = 0; k < n_bytes; ++k) b.push_back(static_cast<uint8_t>(k * 7));
  key("x.empty_strings");
  put(uint32_t{9});
  put(uint32_t{8});  // STRING
  put(n_strings);
  b.resize(b.size() + n_strings * 8, 0);
  key("x.nested");
  put(uint32_t{9});
  put(uint32_t{9});  // ARRAY of arrays of INT32
  put(uint64_t{2});
  for (int32_t row = 0; row < 2; ++row) {
    put(uint32_t{5});
    put(uint64_t{2});
    put(row * 10 + 1);
    put(row * 10 + 2);
  }
  b.resize((b.size() + 31) / 32 * 32, 0);
  return b;
}

// Issue 31, item 6: a 16 MiB UINT8 array loaded at 1.8 GB resident (a GGUFValue per byte) and
// 2 million empty strings at 454 MB. Arrays stay views of the file until they are read.
TEST(GGUFRoundTrip, UnreadArraysCostNoMemory) {
  const uint64_t n_bytes = uint64_t{4} << 20, n_strings = uint64_t{1} << 20;
  const auto img = image_with_big_arrays(n_bytes, n_strings);
  const size_t before = heap_in_use();
  auto f = GGUFFile::from_memory(img.data(), img.size(), "big.gguf");
  const size_t used = heap_in_use() - before;
  EXPECT_LT(used, size_t{1} << 20) << "opening a file with " << n_bytes << " UINT8 and " << n_strings
                                   << " empty strings in its metadata allocated " << used << " bytes";
  const GGUFValue& bytes = f->get("x.bytes");
  EXPECT_EQ(bytes.size(), n_bytes);
  EXPECT_EQ(bytes.to_string(), "[4194304 x UINT8]");
  const auto ints = f->get_int_array("x.bytes");
  ASSERT_EQ(ints.size(), n_bytes);
  EXPECT_EQ(ints[3], 21);
  EXPECT_EQ(ints[n_bytes - 1], static_cast<uint8_t>((n_bytes - 1) * 7));
  EXPECT_EQ(f->get_string_array("x.empty_strings").size(), n_strings);
  const auto rows = f->get("x.nested").elements();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[1] == GGUFValue::i32_array({11, 12}));
  // A view equals the same array built in code, and the writer copies it.
  GGUFWriter w;
  w.set("x.nested", f->get("x.nested"));
  const auto out = w.to_bytes();
  auto g = GGUFFile::from_memory(out.data(), out.size(), "copy.gguf");
  EXPECT_TRUE(g->get("x.nested") == f->get("x.nested"));
  EXPECT_TRUE(g->get("x.nested") ==
              GGUFValue::array(VT::ARRAY, {GGUFValue::i32_array({1, 2}), GGUFValue::i32_array({11, 12})}));
}

TEST(GGUFValue, NamesAndHelpers) {
  EXPECT_STREQ(gguf_value_type_name(VT::UINT8), "UINT8");
  EXPECT_STREQ(gguf_value_type_name(VT::FLOAT64), "FLOAT64");
  EXPECT_STREQ(gguf_value_type_name(VT::ARRAY), "ARRAY");
  EXPECT_STREQ(gguf_value_type_name(static_cast<VT>(13)), "unknown");
  EXPECT_TRUE(gguf_value_type_valid(12));
  EXPECT_FALSE(gguf_value_type_valid(13));
  EXPECT_TRUE(GGUFValue::i16(-3).is_integer());
  EXPECT_FALSE(GGUFValue::boolean(true).is_integer());
  EXPECT_TRUE(GGUFValue::f64(2).is_float());
  EXPECT_EQ(GGUFValue::i8(-7).as_int("x"), -7);
  EXPECT_DOUBLE_EQ(GGUFValue::u16(9).as_float("x"), 9.0);
  EXPECT_EQ(GGUFValue::str_array({"a", "b"}).to_string(), "[2 x STRING]");
  EXPECT_EQ(GGUFValue::str("hi").to_string(), "\"hi\"");
  EXPECT_EQ(GGUFValue::boolean(false).to_string(), "false");
  EXPECT_FALSE(GGUFValue::u32(1) == GGUFValue::i32(1));  // same number, different type
  EXPECT_FALSE(GGUFValue::i32_array({1, 2}) == GGUFValue::i32_array({1, 3}));
  EXPECT_TRUE(GGUFValue::f32(NAN) == GGUFValue::f32(NAN));
  try {
    GGUFValue::str("s").as_int("general.file_type");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "general.file_type has type STRING, expected an integer");
  }
}

}  // namespace
}  // namespace minfer
