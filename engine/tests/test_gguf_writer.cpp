// GGUFWriter: the exact bytes of a small file (GGUF v3 as the spec lays it out), validation
// of values and tensors, key replacement, and failure handling (temp file removed, a good
// file already at the path left untouched).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <functional>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "gguf_raw_bytes.h"

namespace minfer {
namespace {

namespace fs = std::filesystem;
using VT = GGUFValueType;
using Raw = testing::RawGGUF;

fs::path temp_dir() {
  fs::path dir = fs::path(MINFER_BINARY_DIR) / "test-tmp" / "gguf_writer";
  fs::create_directories(dir);
  return dir;
}

std::vector<uint8_t> read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}


void expect_error(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected an Error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << fragment;
  }
}

TEST(GGUFWriter, ExactBytesOfASmallFile) {
  std::mt19937 rng(3);
  std::vector<uint8_t> f32_data(2 * 4), q8_data(34 * 2);
  for (auto& x : f32_data) x = static_cast<uint8_t>(rng() | 1);
  for (auto& x : q8_data) x = static_cast<uint8_t>(rng() | 1);

  GGUFWriter w;
  w.set("general.architecture", GGUFValue::str("qwen2"));
  w.set("qwen2.block_count", GGUFValue::u32(24));
  w.set("tokenizer.ggml.token_type", GGUFValue::i32_array({1, 3}));
  w.add_tensor("output_norm.weight", {2}, WeightType::F32, f32_data);
  w.add_tensor("token_embd.weight", {32, 2}, WeightType::Q8_0, q8_data);

  Raw r;
  r.put<uint32_t>(0x46554747).put<uint32_t>(3).put<uint64_t>(2).put<uint64_t>(3);
  r.str("general.architecture").put<uint32_t>(8).str("qwen2");
  r.str("qwen2.block_count").put<uint32_t>(4).put<uint32_t>(24);
  r.str("tokenizer.ggml.token_type").put<uint32_t>(9).put<uint32_t>(5).put<uint64_t>(2);
  r.put<int32_t>(1).put<int32_t>(3);
  r.str("output_norm.weight").put<uint32_t>(1).put<int64_t>(2).put<uint32_t>(0).put<uint64_t>(0);
  r.str("token_embd.weight").put<uint32_t>(2).put<int64_t>(32).put<int64_t>(2);
  r.put<uint32_t>(8).put<uint64_t>(32);  // F32 data (8 bytes) padded to 32
  r.pad(32);
  r.b.insert(r.b.end(), f32_data.begin(), f32_data.end());
  r.pad(32);
  r.b.insert(r.b.end(), q8_data.begin(), q8_data.end());
  r.pad(32);
  EXPECT_EQ(w.to_bytes(), r.b);

  fs::path path = temp_dir() / "small.gguf";
  w.write(path.string());
  EXPECT_EQ(read_all(path), r.b);
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(GGUFWriter, SetReplacesAndKeepsOrder) {
  GGUFWriter w;
  w.set("a", GGUFValue::u32(1));
  w.set("b", GGUFValue::str("x"));
  w.set("a", GGUFValue::f32(2.5f));
  auto bytes = w.to_bytes();
  auto f = GGUFFile::from_memory(bytes.data(), bytes.size(), "w.gguf");
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "a");
  EXPECT_DOUBLE_EQ(f->get_float("a"), 2.5);
  EXPECT_EQ(f->metadata()[1].first, "b");
}

TEST(GGUFWriter, AlignmentKeyDrivesTheLayout) {
  GGUFWriter w;
  w.set("general.alignment", GGUFValue::u32(128));
  w.add_tensor("a", {3}, WeightType::F16, std::vector<uint8_t>(6, 1));
  w.add_tensor("b", {3}, WeightType::F16, std::vector<uint8_t>(6, 2));
  EXPECT_EQ(w.alignment(), 128u);
  auto bytes = w.to_bytes();
  EXPECT_EQ(bytes.size() % 128, 0u);
  auto f = GGUFFile::from_memory(bytes.data(), bytes.size(), "a.gguf");
  EXPECT_EQ(f->alignment(), 128u);
  EXPECT_EQ(f->tensor("b").offset, 128u);
  EXPECT_EQ(f->tensor("b").data[5], 2);
}

TEST(GGUFWriter, RejectsBadValuesAndTensors) {
  auto write_with = [](const std::string& key, GGUFValue v) {
    return [key, v] {
      GGUFWriter w;
      w.set(key, v);
      w.to_bytes();
    };
  };
  GGUFValue big_u8 = GGUFValue::u8(1);
  big_u8.u = 300;
  expect_error(write_with("k", big_u8), "metadata key 'k': value 300 does not fit UINT8");
  GGUFValue big_i16 = GGUFValue::i16(1);
  big_i16.i = -40000;
  expect_error(write_with("k", big_i16), "value -40000 does not fit INT16");
  GGUFValue big_f32 = GGUFValue::f32(0);
  big_f32.f = 1e300;
  expect_error(write_with("k", big_f32), "does not fit FLOAT32");
  expect_error(write_with("arr", GGUFValue::array(VT::INT32, {GGUFValue::i32(1),
                                                              GGUFValue::u32(2)})),
               "metadata key 'arr': element 1 has type UINT32 in an array of INT32");
  GGUFValue bad_type;
  bad_type.type = static_cast<VT>(99);
  expect_error(write_with("t", bad_type), "metadata key 't': invalid value type id 99");
  GGUFValue deep = GGUFValue::i32_array({1});
  for (int level = 1; level <= kGGUFMaxArrayNesting; ++level)
    deep = GGUFValue::array(VT::ARRAY, {deep});
  expect_error(write_with("deep", deep), "arrays nested deeper than 4 levels");

  GGUFWriter w;
  expect_error([&] { w.set_alignment(48); }, "general.alignment 48 is not a power of two");
  expect_error([&] { w.set("general.alignment", GGUFValue::str("32")); },
               "general.alignment must be an integer");
  expect_error([&] { w.add_tensor("x", {33}, WeightType::Q4_0, std::vector<uint8_t>(18)); },
               "tensor 'x': row length 33 is not a multiple of Q4_0's block size 32");
  expect_error([&] { w.add_tensor("x", {32}, WeightType::Q4_0, std::vector<uint8_t>(17)); },
               "tensor 'x': data has 17 bytes, Q4_0 of this shape needs 18");
  expect_error([&] { w.add_tensor("x", {4, 0}, WeightType::F32, {}); },
               "tensor 'x': dimension 1 is 0 (must be positive)");
  expect_error([&] { w.add_tensor("x", {}, WeightType::F32, {}); }, "has 0 dimensions");
  expect_error([&] { w.add_tensor("x", {1, 1, 1, 1, 1}, WeightType::F32, {}); },
               "has 5 dimensions");
  expect_error([&] { w.add_tensor("x", {1}, static_cast<WeightType>(10), {}); },
               "unknown weight type id 10");
  expect_error([&] { w.add_tensor(std::string(64, 'n'), {1}, WeightType::F32, {}); },
               "name is 64 bytes, longer than ggml's 63");
  expect_error([&] { w.add_tensor("", {1}, WeightType::F32, std::vector<uint8_t>(4)); },
               "tensor name is empty");
  w.add_tensor("x", {1}, WeightType::F32, std::vector<uint8_t>(4));
  expect_error([&] { w.add_tensor("x", {1}, WeightType::F32, std::vector<uint8_t>(4)); },
               "tensor 'x': duplicate tensor name");
  EXPECT_EQ(w.n_tensors(), 1u);
}

TEST(GGUFWriter, FailedRenameRemovesTempFile) {
  // The target is a non-empty directory: the rename must fail, the temp file must go.
  fs::path dir = temp_dir() / "occupied.gguf";
  fs::create_directories(dir / "inside");
  GGUFWriter w;
  w.set("k", GGUFValue::u32(1));
  expect_error([&] { w.write(dir.string()); }, "renaming '");
  EXPECT_FALSE(fs::exists(dir.string() + ".tmp"));
  EXPECT_TRUE(fs::is_directory(dir / "inside"));
}

// Issue 31, item 9: the temporary was opened with fopen, so a symlink planted at "<path>.tmp"
// was written through (the target overwritten) and then renamed into place.
TEST(GGUFWriter, ASymlinkAtTheTempPathIsNotFollowed) {
  const fs::path dir = temp_dir() / "tmp-link";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path victim = dir / "victim.txt", out = dir / "m.gguf";
  { std::ofstream(victim) << "victim"; }
  fs::create_symlink(victim, out.string() + ".tmp");
  GGUFWriter w;
  w.set("k", GGUFValue::u32(1));
  expect_error([&] { w.write(out.string()); }, out.string() + ".tmp' is a symlink or not a regular file");
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "victim");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_symlink(out.string() + ".tmp")) << "not ours to remove";
  // A regular file there is a killed writer's leftover: replaced.
  fs::remove(out.string() + ".tmp");
  { std::ofstream(out.string() + ".tmp") << "left by a killed run"; }
  w.write(out.string());
  EXPECT_EQ(GGUFFile::open(out.string())->get_int("k"), 1);
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
}

TEST(GGUFWriter, MissingDirectoryIsAClearError) {
  GGUFWriter w;
  std::string path = (temp_dir() / "no-such-dir" / "m.gguf").string();
  expect_error([&] { w.write(path); }, path + ": creating '" + path + ".tmp' failed: ");
}

// A write that fails half-way (file size limit: EFBIG) must leave the good file in place.
TEST(GGUFWriter, FailedWriteKeepsTheGoodFileAndRemovesTemp) {
  fs::path path = temp_dir() / "keep.gguf";
  GGUFWriter good;
  good.set("which", GGUFValue::str("good"));
  good.write(path.string());
  const std::vector<uint8_t> before = read_all(path);

  GGUFWriter big;
  big.set("which", GGUFValue::str("big"));
  std::vector<uint8_t> data(1 << 20);
  std::mt19937 rng(11);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  big.add_tensor("big", {static_cast<int64_t>(data.size() / 4)}, WeightType::F32, data);

  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of a signal
  struct rlimit lim = old;
  lim.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string message;
  try {
    big.write(path.string());
  } catch (const Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_NE(message.find(path.string() + ": "), std::string::npos) << message;
  EXPECT_NE(message.find("failed: File too large"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
  EXPECT_EQ(read_all(path), before);
  auto f = GGUFFile::open(path.string());
  EXPECT_EQ(f->get_string("which"), "good");
}

}  // namespace

// header(): the bytes write() puts before the data section, made without calling any deferred
// producer; GGUFFile::header_from_memory reads it alone (no data section behind it).
TEST(GGUFWriter, HeaderAloneWithoutMakingTensors) {
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::str("llama"));
  w.add_tensor("output_norm.weight", {4}, WeightType::F32, std::vector<uint8_t>(16, 1));
  int produced = 0;
  w.add_tensor_deferred("token_embd.weight", {32, 3}, WeightType::Q8_0, [&] {
    ++produced;
    return std::vector<uint8_t>(34 * 3, 2);
  });
  const std::vector<uint8_t> header = w.header();
  EXPECT_EQ(produced, 0);
  EXPECT_EQ(header.size() % w.alignment(), 0u);
  EXPECT_EQ(w.data_size(), 32u + 128u);  // 16 and 102 bytes, each padded to 32

  const std::vector<uint8_t> all = w.to_bytes();
  ASSERT_EQ(all.size(), header.size() + w.data_size());
  EXPECT_TRUE(std::equal(header.begin(), header.end(), all.begin()));

  auto h = GGUFFile::header_from_memory(header.data(), header.size(), "header");
  auto f = GGUFFile::from_memory(all.data(), all.size(), "file");
  ASSERT_EQ(h->tensors().size(), 2u);
  EXPECT_EQ(h->data_offset(), f->data_offset());
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(h->tensors()[k].name, f->tensors()[k].name);
    EXPECT_EQ(h->tensors()[k].ne, f->tensors()[k].ne);
    EXPECT_EQ(h->tensors()[k].offset, f->tensors()[k].offset);
    EXPECT_EQ(h->tensors()[k].data, nullptr);
  }
  EXPECT_EQ(h->get_string("general.architecture"), "llama");
  // The whole-file reader still wants the data: the header alone is truncated for it.
  EXPECT_THROW(GGUFFile::from_memory(header.data(), header.size(), "header"), Error);
}

}  // namespace minfer

namespace minfer {
// Deferred tensors (a 7B model written one tensor at a time) give the same bytes as eager ones;
// a producer that makes the wrong size is an error naming the tensor.
TEST(GGUFWriter, DeferredTensorsWriteTheSameBytes) {
  std::vector<uint8_t> a(64 * 4), b(32 * 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 3 + 1);
  GGUFWriter eager, deferred;
  for (GGUFWriter* w : {&eager, &deferred}) w->set("general.architecture", GGUFValue::str("qwen2"));
  eager.add_tensor("a", {64}, WeightType::F32, a);
  eager.add_tensor("b", {32}, WeightType::F32, b);
  int calls = 0;
  deferred.add_tensor_deferred("a", {64}, WeightType::F32, [&] { ++calls; return a; });
  deferred.add_tensor("b", {32}, WeightType::F32, b);
  EXPECT_EQ(calls, 0);  // nothing is made before the write
  EXPECT_EQ(deferred.to_bytes(), eager.to_bytes());
  EXPECT_EQ(calls, 1);
  GGUFWriter bad;
  bad.add_tensor_deferred("short", {64}, WeightType::F32, [] { return std::vector<uint8_t>(10); });
  try {
    bad.to_bytes();
    FAIL() << "no error for a producer of the wrong size";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'short'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(bad.add_tensor_deferred("short", {64}, WeightType::F32, [] { return std::vector<uint8_t>(); }), Error);  // duplicate
}
}  // namespace minfer
