// The generator: deterministic files (the same bytes as the single-threaded generator made, for
// any thread count), the qwen2 keys and shapes, and hidden states that stay in a realistic range
// through every layer (per-layer RMS printed).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <gtest/gtest.h>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "exec/generate.h"
#include "model/model.h"
#include "sha256.h"
#include "test_models.h"

using namespace minfer;

namespace {
struct RmsObserver : Observer {
  std::map<int, double> rms;  // layer -> RMS of its residual output
  double max_abs = 0;
  void on_node_view(const Node& n, const NodeView& view) override {
    if (!view.out || n.name.find("ffn_residual") == std::string::npos) return;
    auto v = view.out->to_host();
    double ss = 0;
    for (float x : v) {
      ss += double(x) * x;
      max_abs = std::max(max_abs, double(std::abs(x)));
    }
    rms[n.layer] = std::sqrt(ss / v.size());
  }
};

void check_rms(const std::string& path) {
  auto m = Model::load(path);
  CpuBackend b(*m, MatmulPath::MMQ);
  RmsObserver o;
  GenerateOptions g;
  g.n_predict = 0;
  generate(*m, b, nullptr, {9707, 11, 1879, 0, 576, 3974, 13}, g, &o);
  for (auto [l, r] : o.rms) {
    std::printf("  %s: layer %2d residual RMS %.3f\n", m->hp.n_layer > 2 ? "0.5b" : "tiny", l, r);
    EXPECT_GT(r, 0.05) << "layer " << l;
    EXPECT_LT(r, 50.0) << "layer " << l;
  }
  std::printf("  max |x| over residuals: %.2f\n", o.max_abs);
}
}  // namespace

TEST(Generator, DeterministicAndLoadable) {
  auto a = minfer::testing::generated_model("gen-a", "tiny", GenWeights::Q4_0, 7);
  MINFER_REQUIRE_MODEL(a);
  auto b = minfer::testing::generated_model("gen-b", "tiny", GenWeights::Q4_0, 7);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  std::string sa((std::istreambuf_iterator<char>(fa)), {}), sb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_EQ(sa, sb) << "same seed must give the same bytes";
  auto m = Model::load(a);
  EXPECT_EQ(m->hp.n_vocab, 151936);
  EXPECT_TRUE(m->hp.tied_embeddings);
  EXPECT_EQ(m->file->get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_EQ(m->layers[0].wq.type, WeightType::Q4_0);
}

// SHA-256 of files the single-threaded generator wrote (before generation went multithreaded):
// every thread count must still write exactly these bytes.
struct Golden {
  const char* weights;
  uint64_t seed;
  const char* sha256;
};
constexpr Golden kTinyGolden[] = {
    {"q4_k_m", 1, "de85f3b73fc158393f18c78d494def96a0192488431a59a1b65cc3dceff89374"},
    {"q8_0", 7, "528b41e754f552bec1d7a2e594566ac5da4508516efc709cf397dfbfc1c5c78c"},
    {"q4_0", 7, "ab3a1aa0380d5244186365dc2eca3d5f6ae17e0ff9f67ba73c988bc3786bc1f9"},
};

// The other families' tiny presets (q8_0, seed 1), with their own vocabularies.
struct FamilyGolden {
  const char* preset;
  const char* sha256;
};
constexpr FamilyGolden kFamilyGolden[] = {
    {"qwen3-tiny", "b56ec73268da3f401eacb2817baad5507b8108ac80165801198e058778af40d4"},
    {"llama-tiny", "db2fc876c8ef2a23650d2b98e662f7ef541bcc45276d988d976207c4294a6e6f"},
};

TEST(Generator, GoldenBytesForAnyThreadCount) {
  const std::string tok = minfer::testing::tokenizer_json();
  MINFER_REQUIRE_MODEL(std::filesystem::exists(tok) ? tok : std::string());  // skips without the vocabulary
  const std::string dir = std::string(MINFER_BINARY_DIR) + "/test-models";
  std::filesystem::create_directories(dir);
  for (const FamilyGolden& g : kFamilyGolden)
    for (int threads : {1, 4}) {
      GenSpec s;
      s.preset = g.preset;
      s.weights = GenWeights::Q8_0;
      s.threads = threads;
      s.tokenizer_json = minfer::testing::tokenizer_json(preset_hparams(g.preset).arch);
      MINFER_REQUIRE_MODEL(std::filesystem::exists(s.tokenizer_json) ? s.tokenizer_json : std::string());
      const std::string path = dir + "/gen-golden-family." + std::to_string(::getpid()) + ".gguf";
      generate_model(s, path);
      EXPECT_EQ(trace::sha256_file(path, ""), g.sha256) << g.preset << ", " << threads << " threads";
      std::filesystem::remove(path);
    }
  for (const Golden& g : kTinyGolden)
    for (int threads : {1, 4}) {
      GenSpec s;
      s.preset = "tiny";
      s.weights = gen_weights_from_name(g.weights);
      s.seed = g.seed;
      s.threads = threads;
      s.tokenizer_json = tok;
      const std::string path = dir + "/gen-golden." + std::to_string(::getpid()) + ".gguf";
      generate_model(s, path);
      EXPECT_EQ(trace::sha256_file(path, ""), g.sha256)
          << "tiny " << g.weights << " seed " << g.seed << ", " << threads << " threads";
      std::filesystem::remove(path);
    }
}

// Every 0.5b matrix is split over the workers (the tiny preset's smallest ones are not).
TEST(Generator, GoldenBytes05b) {
  auto p = minfer::testing::generated_model("gen-rms-05b", "qwen2.5-0.5b", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(p);
  EXPECT_EQ(trace::sha256_file(p, ""), "ef66e75327d1b29f0b400d14f6a6b4cb09cb1839fa949d60a34ffb9609b3b41f");
}

TEST(Generator, Q4KMMixUsesSeveralTypes) {
  auto p = minfer::testing::generated_model("gen-q4km", "tiny", GenWeights::Q4_K_M);
  MINFER_REQUIRE_MODEL(p);
  auto m = Model::load(p);
  bool mixed = false;
  for (auto& [cls, t] : m->weight_type_summary()) {
    std::printf("  %s: %s\n", cls.c_str(), t.c_str());
    if (t.find("K") != std::string::npos) mixed = true;
  }
  EXPECT_TRUE(mixed);
}

TEST(Generator, PerLayerRmsTiny) {
  auto p = minfer::testing::generated_model("gen-rms-tiny", "tiny", GenWeights::F32);
  MINFER_REQUIRE_MODEL(p);
  check_rms(p);
}

TEST(Generator, PerLayerRms05bShapes) {
  auto p = minfer::testing::generated_model("gen-rms-05b", "qwen2.5-0.5b", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(p);
  auto m = Model::load(p);
  EXPECT_EQ(m->hp.n_layer, 24);
  EXPECT_EQ(m->hp.n_embd, 896);
  EXPECT_EQ(m->hp.n_head, 14);
  EXPECT_EQ(m->hp.n_head_kv, 2);
  EXPECT_EQ(m->hp.n_ff, 4864);
  EXPECT_DOUBLE_EQ(m->hp.rope_base, 1e6);
  check_rms(p);
}

namespace minfer {
// The 7B preset: Qwen2.5-7B's shapes, untied embeddings (its own output matrix).
TEST(Generator, Qwen25_7bPresetShapes) {
  const HParams h = preset_hparams("qwen2.5-7b");
  EXPECT_EQ(h.n_layer, 28);
  EXPECT_EQ(h.n_embd, 3584);
  EXPECT_EQ(h.n_head, 28);
  EXPECT_EQ(h.n_head_kv, 4);
  EXPECT_EQ(h.head_dim, 128);
  EXPECT_EQ(h.n_ff, 18944);
  EXPECT_EQ(h.n_vocab, 152064);
  EXPECT_FALSE(h.tied_embeddings);
  EXPECT_THROW(preset_hparams("qwen2.5-70b"), Error);
}

// The qwen3 and llama presets: the real checkpoints' shapes.
TEST(Generator, Qwen3AndLlamaPresetShapes) {
  const HParams q = preset_hparams("qwen3-0.6b");
  EXPECT_EQ(q.arch, Architecture::Qwen3);
  EXPECT_EQ(q.n_layer, 28);
  EXPECT_EQ(q.n_embd, 1024);
  EXPECT_EQ(q.n_head, 16);
  EXPECT_EQ(q.head_dim, 128);
  EXPECT_EQ(q.n_embd_q(), 2048);  // the attention width differs from n_embd
  EXPECT_EQ(q.n_head_kv, 8);
  EXPECT_EQ(q.n_ff, 3072);
  EXPECT_EQ(q.n_vocab, 151936);
  EXPECT_TRUE(q.tied_embeddings);
  const HParams l1 = preset_hparams("llama-3.2-1b");
  EXPECT_EQ(l1.arch, Architecture::Llama);
  EXPECT_EQ(l1.n_layer, 16);
  EXPECT_EQ(l1.n_embd, 2048);
  EXPECT_EQ(l1.n_head, 32);
  EXPECT_EQ(l1.head_dim, 64);
  EXPECT_EQ(l1.n_head_kv, 8);
  EXPECT_EQ(l1.n_ff, 8192);
  EXPECT_EQ(l1.n_vocab, 128256);
  EXPECT_DOUBLE_EQ(l1.rope_base, 500000);
  EXPECT_DOUBLE_EQ(l1.rms_eps, 1e-5);
  EXPECT_TRUE(l1.tied_embeddings);
  const HParams l8 = preset_hparams("llama-3.1-8b");
  EXPECT_EQ(l8.n_layer, 32);
  EXPECT_EQ(l8.n_embd, 4096);
  EXPECT_EQ(l8.n_head, 32);
  EXPECT_EQ(l8.head_dim, 128);
  EXPECT_EQ(l8.n_head_kv, 8);
  EXPECT_EQ(l8.n_ff, 14336);
  EXPECT_FALSE(l8.tied_embeddings);
}
}  // namespace minfer
