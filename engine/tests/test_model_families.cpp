// The qwen3 and llama families on the CPU, end to end: the generated tiny models carry exactly
// the metadata keys and tensor names llama.cpp's converter writes (literal lists below, from
// convert_hf_to_gguf.py / gguf-py's constants), their graphs have each family's nodes and widths,
// and `minfer` runs them with a trace that `minfer-trace validate` accepts (on the CPU, and on the
// CUDA backend when a GPU is there).
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gguf/gguf_writer.h"
#include "graph/build_graph.h"
#include "model/model.h"
#if MINFER_HAVE_CUDA
#include "cuda/device_info.h"
#endif
#include "test_models.h"

namespace fs = std::filesystem;
using namespace minfer;

namespace {

const std::string kBin = std::string(MINFER_BINARY_DIR) + "/bin/";

// Keys every family writes, with ARCH for general.architecture.
const std::vector<std::string> kCommonKeys = {
    "general.architecture", "general.name", "general.quantization_version", "ARCH.context_length",
    "ARCH.embedding_length", "ARCH.block_count", "ARCH.feed_forward_length", "ARCH.attention.head_count",
    "ARCH.attention.head_count_kv", "ARCH.rope.freq_base", "ARCH.attention.layer_norm_rms_epsilon",
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token"};
const std::vector<std::string> kQwen3Keys = {"qwen3.attention.key_length", "qwen3.attention.value_length"};
const std::vector<std::string> kLlamaKeys = {"llama.vocab_size", "llama.rope.dimension_count"};
const std::vector<std::string> kLayerTensors = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                                "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};

std::set<std::string> expected_keys(const std::string& arch, const std::vector<std::string>& extra) {
  std::set<std::string> keys(extra.begin(), extra.end());
  for (std::string k : kCommonKeys) {
    if (k.rfind("ARCH.", 0) == 0) k = arch + k.substr(4);
    keys.insert(k);
  }
  return keys;
}

// The file's keys, less minfer's own (minfer.generator.*) and the optional chat template.
std::set<std::string> written_keys(const GGUFFile& f) {
  std::set<std::string> keys;
  for (const auto& [k, v] : f.metadata())
    if (k.rfind("minfer.", 0) != 0 && k != "tokenizer.chat_template") keys.insert(k);
  return keys;
}

std::set<std::string> written_tensors(const GGUFFile& f) {
  std::set<std::string> names;
  for (const auto& t : f.tensors()) names.insert(t.name);
  return names;
}

std::set<std::string> expected_tensors(int64_t n_layer, const std::vector<std::string>& layer_extra,
                                       const std::vector<std::string>& global_extra) {
  std::set<std::string> names = {"token_embd.weight", "output_norm.weight"};
  for (const auto& g : global_extra) names.insert(g + ".weight");
  for (int64_t l = 0; l < n_layer; ++l) {
    for (const auto& t : kLayerTensors) names.insert("blk." + std::to_string(l) + "." + t + ".weight");
    for (const auto& t : layer_extra) names.insert("blk." + std::to_string(l) + "." + t + ".weight");
  }
  return names;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Runs the model on the CPU with a trace, validates it, and returns the trace.
nlohmann::json run_traced(const std::string& model, const std::string& tag) {
  const fs::path dir = fs::path(MINFER_BINARY_DIR) / "test-families" / tag;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string t = (dir / "t.json").string(), log = (dir / "log").string();
  EXPECT_EQ(sh("MINFER_TRACE=" + t + " " + kBin + "minfer " + model +
               " \"Hello, it's 12345 apples\" -n 5 --backend cpu --quiet >" + log + " 2>&1"),
            0)
      << slurp(log);
  EXPECT_EQ(sh(kBin + "minfer-trace validate " + t + " >" + log + " 2>&1"), 0) << slurp(log);
  return nlohmann::json::parse(slurp(t));
}

const nlohmann::json* graph_node(const nlohmann::json& graph, const std::string& name) {
  for (const auto& n : graph.at("nodes"))
    if (n.at("name") == name) return &n;
  return nullptr;
}

}  // namespace

TEST(ModelFamilies, Qwen3KeysAndTensorsAreLlamaCppNames) {
  auto p = minfer::testing::generated_model("fam-qwen3-tiny", "qwen3-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(p);
  auto f = GGUFFile::open(p);
  EXPECT_EQ(written_keys(*f), expected_keys("qwen3", kQwen3Keys));
  EXPECT_EQ(written_tensors(*f), expected_tensors(2, {"attn_q_norm", "attn_k_norm"}, {}));
  EXPECT_EQ(f->get_string("general.architecture"), "qwen3");
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_FALSE(f->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(f->tensor("blk.0.attn_q.weight").ne, (std::vector<int64_t>{64, 128}));  // n_embd -> 4 x 32
  EXPECT_EQ(f->tensor("blk.0.attn_output.weight").ne, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(f->tensor("blk.0.attn_q_norm.weight").ne, (std::vector<int64_t>{32}));
}

TEST(ModelFamilies, LlamaKeysAndTensorsAreLlamaCppNames) {
  auto p = minfer::testing::generated_model("fam-llama-tiny", "llama-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(p);
  auto f = GGUFFile::open(p);
  EXPECT_EQ(written_keys(*f), expected_keys("llama", kLlamaKeys));
  EXPECT_EQ(written_tensors(*f), expected_tensors(2, {}, {"rope_freqs"}));
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "llama-bpe");
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id"), 128000);
  EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), 128001);
  EXPECT_EQ(f->tensor("rope_freqs.weight").ne, (std::vector<int64_t>{8}));
  EXPECT_EQ(f->tensor("token_embd.weight").ne, (std::vector<int64_t>{64, 128256}));
}

TEST(ModelFamilies, GraphsHaveEachFamilysNodes) {
  auto q3 = minfer::testing::generated_model("fam-qwen3-tiny", "qwen3-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(q3);
  auto m = Model::load(q3);
  Graph g = make_graph(*m, Phase::Prefill, 3);
  EXPECT_EQ(g.node(g.find("blk.0.attn_q_norm")).op, Op::HeadRmsNorm);
  EXPECT_EQ(g.node(g.find("blk.0.q_rope")).src[0], g.find("blk.0.attn_q_norm"));
  EXPECT_EQ(g.node(g.find("blk.0.attn")).shape, (std::vector<int64_t>{3, 128}));  // 4 heads x 32, not n_embd
  EXPECT_EQ(g.find("blk.0.attn_q_bias"), -1);
  EXPECT_TRUE(g.node(g.find("blk.0.attn_q")).bias.empty());

  auto ll = minfer::testing::generated_model("fam-llama-tiny", "llama-tiny", GenWeights::Q8_0);
  auto ml = Model::load(ll);
  Graph gl = make_graph(*ml, Phase::Decode, 1);
  const Node& rope = gl.node(gl.find("blk.1.k_rope"));
  EXPECT_EQ(rope.op, Op::RopeNormal);
  EXPECT_EQ(rope.weight, "rope_freqs.weight");
  EXPECT_EQ(gl.find("blk.0.attn_q_norm"), -1);
}

TEST(ModelFamilies, Qwen3TinyRunsOnCpuWithAValidTrace) {
  auto p = minfer::testing::generated_model("fam-qwen3-tiny", "qwen3-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(p);
  const auto t = run_traced(p, "qwen3");
  EXPECT_EQ(t["meta"]["model"]["architecture"], "qwen3");
  EXPECT_EQ(t["steps"].size(), 5u);
  const auto* qn = graph_node(t["graphs"][0], "blk.1.attn_k_norm");
  ASSERT_NE(qn, nullptr);
  EXPECT_EQ((*qn)["op"], "head_rms_norm");
}

TEST(ModelFamilies, LlamaTinyRunsOnCpuWithAValidTraceAndBos) {
  auto p = minfer::testing::generated_model("fam-llama-tiny", "llama-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(p);
  const auto t = run_traced(p, "llama");
  EXPECT_EQ(t["meta"]["model"]["architecture"], "llama");
  EXPECT_EQ(t["steps"][0]["tokens"][0]["id"], 128000) << "the prompt starts with <|begin_of_text|>";
  const auto* rope = graph_node(t["graphs"][0], "blk.0.q_rope");
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ((*rope)["op"], "rope_normal");
}

TEST(ModelFamilies, TokenizeAddsLlamaBosOnly) {
  auto q3 = minfer::testing::generated_model("fam-qwen3-tiny", "qwen3-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(q3);
  auto ll = minfer::testing::generated_model("fam-llama-tiny", "llama-tiny", GenWeights::Q8_0);
  const fs::path out = fs::path(MINFER_BINARY_DIR) / "test-families" / "tokenize.txt";
  fs::create_directories(out.parent_path());
  ASSERT_EQ(sh(kBin + "minfer tokenize " + ll + " 'Hello world' >" + out.string()), 0);
  EXPECT_EQ(slurp(out.string()), "[128000,9906,1917]\n");
  ASSERT_EQ(sh(kBin + "minfer tokenize " + q3 + " 'Hello world' >" + out.string()), 0);
  EXPECT_EQ(slurp(out.string()), "[9707,1879]\n");
}

// Every family Model::load accepts runs on the CUDA backend: --backend cuda is refused only for
// want of a usable GPU (or of the CUDA toolkit in this build), never for the family. With a GPU,
// both new families generate there with a trace that validates, and auto picks cuda.
TEST(ModelFamilies, CudaBackendRunsTheNewFamilies) {
  auto q3 = minfer::testing::generated_model("fam-qwen3-tiny", "qwen3-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(q3);
  auto ll = minfer::testing::generated_model("fam-llama-tiny", "llama-tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(ll);
  std::string no_gpu;
#if MINFER_HAVE_CUDA
  const bool gpu = cuda::device_usable(&no_gpu);
#else
  const bool gpu = false;
  no_gpu = "this build of minfer has no CUDA backend";
#endif
  for (const auto& [model, tag] : {std::pair{q3, std::string("qwen3")}, std::pair{ll, std::string("llama")}}) {
    SCOPED_TRACE(tag);
    const fs::path dir = fs::path(MINFER_BINARY_DIR) / "test-families" / ("cuda-" + tag);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string t = (dir / "t.json").string(), log = (dir / "log").string();
    const int rc = sh("MINFER_TRACE=" + t + " " + kBin + "minfer " + model + " \"Hello, it's 12345 apples\" -n 4 --backend cuda >" +
                      log + " 2>&1");
    const std::string out = slurp(log);
    EXPECT_EQ(out.find("not yet supported"), std::string::npos) << out;
    if (!gpu) {
      EXPECT_EQ(rc, 1) << out;
      EXPECT_NE(out.find("--backend cuda: " + no_gpu.substr(0, 20)), std::string::npos) << out;
      continue;
    }
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("backend: cuda on "), std::string::npos) << out;
    EXPECT_EQ(sh(kBin + "minfer-trace validate " + t + " >" + log + " 2>&1"), 0) << slurp(log);
    const auto j = nlohmann::json::parse(slurp(t));
    EXPECT_EQ(j["meta"]["model"]["architecture"], tag);
    EXPECT_GE(j["steps"].size(), 1u);  // up to 4 (an end-of-generation token may stop it early)
    EXPECT_LE(j["steps"].size(), 4u);
    // auto picks the GPU for the family too.
    EXPECT_EQ(sh(kBin + "minfer " + model + " hi -n 1 >" + log + " 2>&1"), 0) << slurp(log);
    EXPECT_NE(slurp(log).find("backend: cuda (auto)"), std::string::npos) << slurp(log);
  }
}

// An architecture nobody supports stays a clear error on every backend, before any GPU work.
TEST(ModelFamilies, OtherArchitecturesAreAClearError) {
  const fs::path dir = fs::path(MINFER_BINARY_DIR) / "test-families" / "other-arch";
  fs::create_directories(dir);
  const std::string model = (dir / "gemma3.gguf").string(), log = (dir / "log").string();
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::str("gemma3"));
  w.set("gemma3.block_count", GGUFValue::u32(1));
  w.write(model);
  for (const char* backend : {"cpu", "cuda", "auto"}) {
    SCOPED_TRACE(backend);
    EXPECT_EQ(sh(kBin + "minfer " + model + " hi -n 1 --backend " + backend + " >" + log + " 2>&1"), 1) << slurp(log);
    EXPECT_NE(slurp(log).find("unsupported architecture 'gemma3' (general.architecture); minfer supports qwen2, qwen3 or llama"),
              std::string::npos)
        << slurp(log);
  }
}
