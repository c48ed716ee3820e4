// Hand-built corrupt GGUF images, each rejected with the message that names the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "gguf_raw_bytes.h"

namespace minfer {
namespace {

namespace fs = std::filesystem;
using Raw = testing::RawGGUF;


std::string parse_error(const std::vector<uint8_t>& bytes, const std::string& label = "c.gguf") {
  // An exact-size heap copy, so that any read past the end is caught by AddressSanitizer.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size() + 1]);
  std::copy(bytes.begin(), bytes.end(), copy.get());
  try {
    GGUFFile::from_memory(copy.get(), bytes.size(), label);
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed without error)";
}

TEST(GGUFCorrupt, ValidBaseParses) {
  // The images below are this one with one thing broken: make sure the base itself is fine.
  Raw r;
  r.header(2, 1).kv_u32("general.alignment", 32);
  r.tensor("a", {32, 2}, 8, 0).tensor("b", {4}, 0, 96).data(96 + 16);
  auto f = GGUFFile::from_memory(r.b.data(), r.b.size(), "c.gguf");
  EXPECT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensor("b").nbytes, 16u);
}

TEST(GGUFCorrupt, Header) {
  Raw magic;
  magic.put<uint32_t>(0x58554747).put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(0);
  EXPECT_EQ(parse_error(magic.b), "c.gguf: not a GGUF file (bad magic 'GGUX', expected 'GGUF')");
  EXPECT_EQ(parse_error(Raw().header(0, 0, 1).b),
            "c.gguf: GGUF version 1 is not supported (only versions 2 and 3)");
  EXPECT_EQ(parse_error(Raw().header(0, 0, 4).b),
            "c.gguf: unsupported GGUF version 4 (only versions 2 and 3)");
  EXPECT_EQ(parse_error(Raw().header(0, 0, 0x03000000).b),
            "c.gguf: big-endian GGUF files are not supported");
  EXPECT_EQ(parse_error({}),
            "c.gguf: truncated file: magic needs 4 bytes at offset 0, only 0 left (file size 0)");
  std::vector<uint8_t> cut = Raw().header(0, 0).b;
  cut.resize(12);
  EXPECT_EQ(parse_error(cut), "c.gguf: truncated file: tensor count needs 8 bytes at offset 8, "
                              "only 4 left (file size 12)");
}

TEST(GGUFCorrupt, AbsurdCountsAndLengths) {
  EXPECT_EQ(parse_error(Raw().header(0, uint64_t{1} << 62).kv_u32("a", 1).b),
            "c.gguf: metadata count 4611686018427387904 cannot fit in the 17 bytes left in the "
            "file");
  EXPECT_EQ(parse_error(Raw().header(uint64_t{1} << 40, 0).tensor("t", {4}, 0, 0).b),
            "c.gguf: tensor count 1099511627776 cannot fit in the 33 bytes left in the file");
  Raw key;
  key.header(0, 1).put<uint64_t>(0xffffffffffffULL).put<uint32_t>(4).put<uint32_t>(7);
  EXPECT_EQ(parse_error(key.b), "c.gguf: metadata entry 0: key length 281474976710655 exceeds "
                                "the 8 bytes left in the file");
  Raw arr;
  arr.header(0, 1).str("tokenizer.ggml.tokens").put<uint32_t>(9).put<uint32_t>(8);
  arr.put<uint64_t>(1000000000000ULL).str("a").str("b");
  EXPECT_EQ(parse_error(arr.b), "c.gguf: metadata key 'tokenizer.ggml.tokens': array of "
                                "1000000000000 STRING elements cannot fit in the 18 bytes left "
                                "in the file");
  Raw s;
  s.header(0, 1).str("general.name").put<uint32_t>(8).put<uint64_t>(5).put<uint8_t>('Q');
  EXPECT_EQ(parse_error(s.b), "c.gguf: metadata key 'general.name': string value length 5 "
                              "exceeds the 1 bytes left in the file");
}

TEST(GGUFCorrupt, MetadataTypesAndKeys) {
  Raw vt;
  vt.header(0, 1).str("x").put<uint32_t>(13).put<uint32_t>(0);
  EXPECT_EQ(parse_error(vt.b), "c.gguf: metadata key 'x': unknown value type id 13");
  Raw et;
  et.header(0, 1).str("x").put<uint32_t>(9).put<uint32_t>(200).put<uint64_t>(0);
  EXPECT_EQ(parse_error(et.b), "c.gguf: metadata key 'x': unknown array element type id 200");
  Raw deep;
  deep.header(0, 1).str("deep").put<uint32_t>(9);
  for (int level = 0; level < 9; ++level) deep.put<uint32_t>(9).put<uint64_t>(1);
  deep.put<uint32_t>(0).put<uint64_t>(0);
  EXPECT_EQ(parse_error(deep.b), "c.gguf: metadata key 'deep': arrays nested deeper than 4 levels");
  EXPECT_EQ(parse_error(Raw().header(0, 2).kv_u32("a", 1).kv_u32("a", 2).b),
            "c.gguf: metadata key 'a': duplicate key");
  // A corrupt key is shown escaped: control bytes and quotes cannot garble the message.
  EXPECT_EQ(parse_error(Raw().header(0, 2).kv_u32("bad\n'key", 1).kv_u32("bad\n'key", 2).b),
            "c.gguf: metadata key 'bad\\x0a\\x27key': duplicate key");
  Raw trunc_value;
  trunc_value.header(0, 1).str("qwen2.block_count").put<uint32_t>(4).put<uint16_t>(24);
  EXPECT_EQ(parse_error(trunc_value.b),
            "c.gguf: truncated file: metadata key 'qwen2.block_count': UINT32 value needs 4 "
            "bytes at offset 53, only 2 left (file size 55)");
}

TEST(GGUFCorrupt, Alignment) {
  EXPECT_EQ(parse_error(Raw().header(0, 1).kv_u32("general.alignment", 0).b),
            "c.gguf: metadata key 'general.alignment' = 0 is not a power of two between 1 and "
            "16777216");
  EXPECT_EQ(parse_error(Raw().header(0, 1).kv_u32("general.alignment", 48).b),
            "c.gguf: metadata key 'general.alignment' = 48 is not a power of two between 1 and "
            "16777216");
  Raw s;
  s.header(0, 1).str("general.alignment").put<uint32_t>(8).str("32");
  EXPECT_EQ(parse_error(s.b),
            "c.gguf: metadata key 'general.alignment' has type STRING, expected an integer");
}

TEST(GGUFCorrupt, TensorInfos) {
  auto one = [](std::vector<int64_t> ne, uint32_t type, uint64_t offset = 0, size_t data = 64) {
    return Raw().header(1, 0).tensor("w", std::move(ne), type, offset).data(data).b;
  };
  EXPECT_EQ(parse_error(one({}, 0)),
            "c.gguf: tensor 'w' (tensor info 0): has 0 dimensions (supported: 1 to 4)");
  EXPECT_EQ(parse_error(one({1, 1, 1, 1, 1}, 0)),
            "c.gguf: tensor 'w' (tensor info 0): has 5 dimensions (supported: 1 to 4)");
  EXPECT_EQ(parse_error(one({4, 0}, 0)),
            "c.gguf: tensor 'w' (tensor info 0): dimension 1 is 0 (must be positive)");
  EXPECT_EQ(parse_error(one({-3}, 0)),
            "c.gguf: tensor 'w' (tensor info 0): dimension 0 is -3 (must be positive)");
  EXPECT_EQ(parse_error(one({int64_t{1} << 40, int64_t{1} << 40}, 0)),
            "c.gguf: tensor 'w' (tensor info 0): element count overflows (dimension 1 is "
            "1099511627776)");
  EXPECT_EQ(parse_error(one({32}, 99)), "c.gguf: tensor 'w' (tensor info 0): unknown type id 99");
  EXPECT_EQ(parse_error(one({256}, 10)),
            "c.gguf: tensor 'w' (tensor info 0): type Q2_K (id 10) is not supported by minfer");
  EXPECT_EQ(parse_error(one({48, 2}, 2)),
            "c.gguf: tensor 'w' (tensor info 0): row length 48 is not a multiple of Q4_0's "
            "block size 32");
  EXPECT_EQ(parse_error(one({896}, 12)),
            "c.gguf: tensor 'w' (tensor info 0): row length 896 is not a multiple of Q4_K's "
            "block size 256");
  Raw dup;
  dup.header(2, 0).tensor("w", {4}, 0, 0).tensor("w", {4}, 0, 32).data(64);
  EXPECT_EQ(parse_error(dup.b), "c.gguf: tensor 'w' (tensor info 1): duplicate tensor name");
  std::vector<uint8_t> cut = one({4, 1, 1, 1}, 0);
  cut.resize(24 + 8 + 1 + 4 + 4 * 8 + 4 + 3);  // three bytes into the data offset
  EXPECT_EQ(parse_error(cut),
            "c.gguf: truncated file: tensor 'w' (tensor info 0): data offset needs 8 bytes at "
            "offset 73, only 3 left (file size 76)");
}

TEST(GGUFCorrupt, TensorData) {
  // Misaligned: offset 16 with the default alignment 32.
  EXPECT_EQ(parse_error(Raw().header(1, 0).tensor("w", {4}, 0, 16).data(64).b),
            "c.gguf: tensor 'w': data offset 16 is not a multiple of the alignment 32");
  // Past the end: the data section starts at 96; 4x32 F32 = 512 bytes, only 400 in the file.
  Raw past;
  past.header(1, 0).tensor("blk.0.attn_q.weight", {4, 32}, 0, 0).data(400 - 96);
  ASSERT_EQ(past.b.size(), 400u);
  EXPECT_EQ(parse_error(past.b, "model.gguf"),
            "model.gguf: tensor 'blk.0.attn_q.weight': data [offset 96, 512 bytes] past end of "
            "file (size 400)");
  // An offset so large that data start + offset overflows.
  EXPECT_EQ(parse_error(Raw().header(1, 0).tensor("w", {4}, 0, ~uint64_t{31}).data(64).b),
            "c.gguf: tensor 'w': data offset 18446744073709551584 is out of range");
  // Two tensors sharing bytes.
  Raw overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).data(128);
  EXPECT_EQ(parse_error(overlap.b),
            "c.gguf: tensor 'b': data [offset 128, 32 bytes] overlaps tensor 'a' [offset 96, 64 "
            "bytes]");
  // The data section itself cut off.
  Raw nodata;
  nodata.header(1, 0).tensor("w", {4}, 0, 0);
  EXPECT_EQ(parse_error(nodata.b),
            "c.gguf: tensor 'w': data [offset 64, 16 bytes] past end of file (size 57)");
}

TEST(GGUFCorrupt, FilesOnDisk) {
  fs::path dir = fs::path(MINFER_BINARY_DIR) / "test-tmp" / "gguf_corrupt";
  fs::create_directories(dir);
  auto open_error = [](const std::string& path) -> std::string {
    try {
      GGUFFile::open(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "(opened without error)";
  };
  std::string missing = (dir / "missing.gguf").string();
  EXPECT_EQ(open_error(missing), missing + ": cannot open: No such file or directory");
  EXPECT_EQ(open_error(dir.string()), dir.string() + ": not a regular file");
  std::string empty = (dir / "empty.gguf").string();
  std::ofstream(empty, std::ios::binary).close();
  EXPECT_EQ(open_error(empty), empty + ": truncated file: magic needs 4 bytes at offset 0, only "
                                       "0 left (file size 0)");
  // A real file cut short on disk: the message names the path and the tensor.
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::str("qwen2"));
  w.add_tensor("token_embd.weight", {64, 4}, WeightType::Q8_0, std::vector<uint8_t>(34 * 8, 1));
  std::string cut = (dir / "cut.gguf").string();
  w.write(cut);
  fs::resize_file(cut, fs::file_size(cut) - 40);
  std::string msg = open_error(cut);
  EXPECT_NE(msg.find(cut + ": tensor 'token_embd.weight': data [offset "), std::string::npos)
      << msg;
  EXPECT_NE(msg.find(", 272 bytes] past end of file (size "), std::string::npos) << msg;
}

}  // namespace
}  // namespace minfer
