// What Model::load refuses although every field parses (issue 31, item 9): an infinite
// rms epsilon or rope base, a NaN in a norm weight or a matrix (a quantized matrix's block
// scale, a float matrix's value), a tokenizer with more tokens than the embedding has rows.
// Each error names the file and the key or tensor, and the block or element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "quant/quant.h"
#include "test_models.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

std::string tiny() { return minfer::testing::generated_model("model-checks", "tiny", GenWeights::Q8_0); }

using TensorEdit = std::function<void(const GGUFTensorInfo&, WeightType&, std::vector<uint8_t>&)>;

// A copy of `src` written to `out` with `edit_meta` applied to its metadata and `edit_tensor` to
// each tensor's type and bytes.
std::string edited_copy(const std::string& src, const std::string& tag,
                        const std::function<void(const std::string&, GGUFValue&)>& edit_meta,
                        const TensorEdit& edit_tensor = {}) {
  auto f = GGUFFile::open(src);
  GGUFWriter w;
  w.set_alignment(f->alignment());
  for (const auto& [key, v] : f->metadata()) {
    GGUFValue e = v;
    edit_meta(key, e);
    w.set(key, e);
  }
  for (const auto& t : f->tensors()) {
    std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
    WeightType type = t.type;
    if (edit_tensor) edit_tensor(t, type, bytes);
    w.add_tensor(t.name, t.ne, type, bytes);
  }
  const std::string out = (fs::path(MINFER_BINARY_DIR) / "test-models" / ("model-checks-" + tag + ".gguf")).string();
  w.write(out);
  return out;
}

// A copy of `src` whose tensor `tensor` is stored as `type` (its values re-quantized), then
// edited by `plant` (its bytes in that type).
std::string retyped_copy(const std::string& src, const std::string& tag, const std::string& tensor, WeightType type,
                         const std::function<void(std::vector<uint8_t>&)>& plant) {
  bool found = false;
  const auto path = edited_copy(
      src, tag, [](const std::string&, GGUFValue&) {},
      [&](const GGUFTensorInfo& t, WeightType& to, std::vector<uint8_t>& b) {
        if (t.name != tensor) return;
        std::vector<float> v(static_cast<size_t>(t.n_elements()));
        dequantize_row(t.type, t.data, v.data(), t.n_elements());
        to = type;
        b.assign(row_bytes(type, t.n_elements()), 0);
        quantize_row(type, v.data(), b.data(), t.n_elements());
        plant(b);
        found = true;
      });
  EXPECT_TRUE(found) << tensor;
  return path;
}

// Writes the f16 `bits` at byte `at`; `at` is a block's field (block * block bytes + offset).
void put_f16(std::vector<uint8_t>& b, size_t at, uint16_t bits) {
  ASSERT_LE(at + 2, b.size());
  std::memcpy(b.data() + at, &bits, 2);
}

constexpr uint16_t kF16NaN = 0x7e00, kF16Inf = 0x7c00, kF16NegInf = 0xfc00;

std::string load_error(const std::string& path, ThreadPool* pool = nullptr) {
  try {
    Model::load(path, pool);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& path, std::initializer_list<const char*> parts, ThreadPool* pool = nullptr) {
  const std::string m = load_error(path, pool);
  ASSERT_FALSE(m.empty()) << path << " loaded";
  EXPECT_NE(m.find(path), std::string::npos) << m;
  for (const char* p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
}

const auto kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST(ModelChecks, TheUneditedCopyLoads) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  EXPECT_EQ(load_error(edited_copy(p, "same", [](const std::string&, GGUFValue&) {})), "");
}

TEST(ModelChecks, InfiniteRmsEpsilonIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = edited_copy(p, "eps", [](const std::string& k, GGUFValue& v) {
    if (k == "qwen2.attention.layer_norm_rms_epsilon") v = GGUFValue::f32(kInf);
  });
  expect_error(path, {"qwen2.attention.layer_norm_rms_epsilon", "finite"});
}

TEST(ModelChecks, InfiniteRopeBaseIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = edited_copy(p, "rope", [](const std::string& k, GGUFValue& v) {
    if (k == "qwen2.rope.freq_base") v = GGUFValue::f32(kInf);
  });
  expect_error(path, {"qwen2.rope.freq_base", "finite"});
}

TEST(ModelChecks, NaNInANormWeightIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  bool edited = false;
  const auto path = edited_copy(
      p, "nan", [](const std::string&, GGUFValue&) {},
      [&](const GGUFTensorInfo& t, WeightType&, std::vector<uint8_t>& b) {
        if (t.name != "blk.0.ffn_norm.weight") return;
        ASSERT_EQ(t.type, WeightType::F32);
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(b.data() + 5 * sizeof(float), &nan, sizeof nan);
        edited = true;
      });
  ASSERT_TRUE(edited);
  expect_error(path, {"blk.0.ffn_norm.weight", "non-finite", "element 5"});
}

TEST(ModelChecks, MoreTokensThanEmbeddingRowsIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = edited_copy(p, "vocab", [](const std::string& k, GGUFValue& v) {
    if (k != "tokenizer.ggml.tokens" && k != "tokenizer.ggml.token_type") return;
    auto elems = v.elements();
    elems.push_back(k == "tokenizer.ggml.tokens" ? GGUFValue::str("<|extra|>") : elems.back());
    v = GGUFValue::array(v.elem_type, std::move(elems));
  });
  expect_error(path, {"tokenizer.ggml.tokens", "token_embd.weight", "rows"});
}

// The matrices of the tiny preset used below: ffn_down {256 cols, 64 rows} (rows of 256: one
// K-quant super-block, eight 32-element blocks), attn_q {64, 64}, attn_k {64, 32}.

TEST(ModelChecks, NaNScaleInAQ4_0MatrixIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = retyped_copy(p, "q4_0-nan", "blk.1.ffn_down.weight", WeightType::Q4_0,
                                 [](std::vector<uint8_t>& b) { put_f16(b, 17 * 18, kF16NaN); });
  expect_error(path, {"tensor 'blk.1.ffn_down.weight'", "block 17 (row 2)", "non-finite scale (d = nan)"});
}

TEST(ModelChecks, InfiniteMinScaleInAQ4_KMatrixIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = retyped_copy(p, "q4_k-inf", "blk.0.ffn_down.weight", WeightType::Q4_K,
                                 [](std::vector<uint8_t>& b) { put_f16(b, 5 * 144 + 2, kF16Inf); });  // dmin
  expect_error(path, {"tensor 'blk.0.ffn_down.weight'", "block 5 (row 5)", "non-finite scale (dmin = inf)"});
}

TEST(ModelChecks, NaNScaleInAQ4_KMatrixIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = retyped_copy(p, "q4_k-nan", "blk.1.ffn_down.weight", WeightType::Q4_K,
                                 [](std::vector<uint8_t>& b) { put_f16(b, 63 * 144, kF16NaN); });  // d, last block
  expect_error(path, {"tensor 'blk.1.ffn_down.weight'", "block 63 (row 63)", "non-finite scale (d = nan)"});
}

TEST(ModelChecks, NegativeInfiniteScaleInAQ6_KMatrixIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  // Q6_K keeps its d at the end of the block (byte 208 of 210).
  const auto path = retyped_copy(p, "q6_k-inf", "blk.0.ffn_down.weight", WeightType::Q6_K,
                                 [](std::vector<uint8_t>& b) { put_f16(b, 9 * 210 + 208, kF16NegInf); });
  expect_error(path, {"tensor 'blk.0.ffn_down.weight'", "block 9 (row 9)", "non-finite scale (d = -inf)"});
}

TEST(ModelChecks, NaNOffsetInAQ4_1MatrixIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = retyped_copy(p, "q4_1-nan", "blk.0.attn_q.weight", WeightType::Q4_1,
                                 [](std::vector<uint8_t>& b) { put_f16(b, 3 * 20 + 2, kF16NaN); });  // m
  expect_error(path, {"tensor 'blk.0.attn_q.weight'", "block 3 (row 1)", "non-finite offset (m = nan)"});
}

TEST(ModelChecks, InfInAnF16MatrixIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = retyped_copy(p, "f16-inf", "blk.1.attn_q.weight", WeightType::F16,
                                 [](std::vector<uint8_t>& b) { put_f16(b, (3 * 64 + 10) * 2, kF16Inf); });
  expect_error(path, {"tensor 'blk.1.attn_q.weight'", "non-finite value (inf) at row 3, column 10"});
}

TEST(ModelChecks, NaNInABF16MatrixIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  const auto path = retyped_copy(p, "bf16-nan", "blk.0.attn_k.weight", WeightType::BF16,
                                 [](std::vector<uint8_t>& b) { put_f16(b, (31 * 64 + 63) * 2, 0x7fc0); });
  expect_error(path, {"tensor 'blk.0.attn_k.weight'", "non-finite value (nan) at row 31, column 63"});
}

TEST(ModelChecks, NaNInAnF32EmbeddingIsRefusedOnAPoolToo) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  // The embedding (151,936 rows) spans many of the pool's chunks: two NaNs far apart, the first
  // one is named whichever thread finds which.
  const auto path = retyped_copy(p, "f32-nan", "token_embd.weight", WeightType::F32, [](std::vector<uint8_t>& b) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(b.data() + (100000 * 64 + 5) * sizeof(float), &nan, sizeof nan);
    std::memcpy(b.data() + (150000 * 64 + 7) * sizeof(float), &nan, sizeof nan);
  });
  expect_error(path, {"tensor 'token_embd.weight'", "non-finite value (nan) at row 100000, column 5"});
  ThreadPool pool(4);
  expect_error(path, {"tensor 'token_embd.weight'", "non-finite value (nan) at row 100000, column 5"}, &pool);
}

TEST(ModelChecks, LargestFiniteScalesAndValuesLoad) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  // 65504 (the largest half), its negative and a subnormal: finite, so the model loads.
  const auto q = retyped_copy(p, "q4_k-max", "blk.0.ffn_down.weight", WeightType::Q4_K, [](std::vector<uint8_t>& b) {
    put_f16(b, 0, 0x7bff);
    put_f16(b, 2, 0xfbff);
    put_f16(b, 144, 0x0001);
  });
  EXPECT_EQ(load_error(q), "");
  const auto f = retyped_copy(p, "f16-max", "blk.0.attn_q.weight", WeightType::F16,
                              [](std::vector<uint8_t>& b) { put_f16(b, 0, 0x7bff); });
  EXPECT_EQ(load_error(f), "");
}
