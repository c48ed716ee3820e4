// What Model::load refuses although every field parses (issue 31, item 9): an infinite
// rms epsilon or rope base, a NaN in a norm weight, a tokenizer with more tokens than the
// embedding has rows. Each error names the file and the key or tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "test_models.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

std::string tiny() { return minfer::testing::generated_model("model-checks", "tiny", GenWeights::Q8_0); }

// A copy of `src` written to `out` with `edit_meta` applied to its metadata and `edit_tensor` to
// each tensor's bytes.
std::string edited_copy(const std::string& src, const std::string& tag,
                        const std::function<void(const std::string&, GGUFValue&)>& edit_meta,
                        const std::function<void(const GGUFTensorInfo&, std::vector<uint8_t>&)>& edit_tensor = {}) {
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
    if (edit_tensor) edit_tensor(t, bytes);
    w.add_tensor(t.name, t.ne, t.type, bytes);
  }
  const std::string out = (fs::path(MINFER_BINARY_DIR) / "test-models" / ("model-checks-" + tag + ".gguf")).string();
  w.write(out);
  return out;
}

std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& path, std::initializer_list<const char*> parts) {
  const std::string m = load_error(path);
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
      [&](const GGUFTensorInfo& t, std::vector<uint8_t>& b) {
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
