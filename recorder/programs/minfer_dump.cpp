// minfer-dump: writes what an outside implementation needs to check minfer: the dequantized
// weights (f32), minfer's per-layer hidden states and logits for a prompt, and a greedy run.
//   minfer-dump MODEL --ids 1,2,3 [--greedy 64] [--no-weights] [--backend auto|cpu|cuda] --out DIR
// DIR/index.json lists every file with its shape; each .f32 file is raw little-endian float32.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/thread_pool.h"
#include "cli/backend_choice.h"
#include "exec/generate.h"
#include "model/model.h"
#include "quant/quant.h"

namespace fs = std::filesystem;
using namespace minfer;

namespace {

void write_f32(const fs::path& p, const std::vector<float>& v) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  if (!f) fail(p.string(), ": write failed");
}

struct LayerCapture : Observer {
  std::map<std::string, std::vector<float>> nodes;
  std::vector<float> logits;
  int step = -1;
  void on_step_begin(const Graph&, const StepInfo& s) override { step = s.step; }
  void on_node_view(const Node& n, const NodeView& v) override {
    if (step == 0 && v.out && (n.name.find("ffn_residual") != std::string::npos || n.name == "token_embd"))
      nodes[n.name] = v.out->to_host();
  }
  void on_step_logits(const StepInfo& s, const StepLogits& l) override {
    if (s.step == 0) logits.assign(l.logits, l.logits + l.n_vocab);
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string model_path, out_dir, ids_text, backend_choice = "auto";
    int greedy = 64;
    bool weights = true;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) fail(a, " needs a value");
        return argv[++i];
      };
      if (a == "--ids") ids_text = value();
      else if (a == "--out") out_dir = value();
      else if (a == "--greedy") greedy = static_cast<int>(parse_int(value(), a, 0, 1 << 20));
      else if (a == "--no-weights") weights = false;
      else if (a == "--backend") backend_choice = parse_backend_flag(value());
      else if (!a.empty() && a[0] == '-') fail("unknown option '", a, "'");
      else model_path = a;
    }
    if (model_path.empty() || out_dir.empty() || ids_text.empty())
      fail("usage: minfer-dump MODEL --ids 1,2,3 [--greedy 64] [--no-weights] [--backend auto|cpu|cuda] --out DIR");
    std::vector<int32_t> ids;
    std::stringstream ss(ids_text);
    for (std::string t; std::getline(ss, t, ',');) ids.push_back(static_cast<int32_t>(parse_int(t, "--ids", 0, INT32_MAX)));
    const EngineOptions engine = EngineOptions::from_env(process_environment());  // the one read of it
    ThreadPool::set_global_threads(engine.threads);
    auto m = Model::load(model_path, &ThreadPool::global());
    fs::create_directories(fs::path(out_dir) / "weights");
    nlohmann::json index;
    const HParams& h = m->hp;
    index["hparams"] = {{"architecture", architecture_name(h.arch)}, {"n_vocab", h.n_vocab}, {"n_ctx", h.n_ctx},
                        {"n_embd", h.n_embd}, {"n_layer", h.n_layer}, {"n_head", h.n_head},
                        {"n_head_kv", h.n_head_kv}, {"head_dim", h.head_dim}, {"n_ff", h.n_ff},
                        {"rope_base", h.rope_base}, {"rms_eps", h.rms_eps}, {"tied", h.tied_embeddings}};
    index["prompt_ids"] = ids;
    if (weights) {
      for (const auto& t : m->file->tensors()) {
        std::vector<float> v(static_cast<size_t>(t.n_elements()));
        const int64_t row = t.ne[0], rows = t.n_elements() / row;
        const size_t rb = row_bytes(t.type, row);
        for (int64_t r = 0; r < rows; ++r) dequantize_row(t.type, t.data + r * rb, v.data() + r * row, row);
        write_f32(fs::path(out_dir) / "weights" / (t.name + ".f32"), v);
        index["weights"][t.name] = {{"ne", t.ne}, {"type", name(t.type)}};
      }
    }
    // Prefill on the MMQ (default) path: hidden state after every layer, last-row logits.
    for (MatmulPath mp : {MatmulPath::MMQ, MatmulPath::Float}) {
      auto backend = make_backend(backend_choice, *m, mp, engine.cuda);
      Backend& b = *backend;
      const std::string tag = b.matmul_path_label();  // "f32" on cpu, "f16" on cuda
      index["paths"].push_back(tag);
      LayerCapture cap;
      GenerateOptions g;
      g.n_predict = greedy;
      g.stop_at_eog = false;
      g.graph_fusion = engine.graph_fusion;
      auto r = generate(*m, b, nullptr, ids, g, &cap);
      fs::create_directories(fs::path(out_dir) / tag);
      for (auto& [name, v] : cap.nodes) write_f32(fs::path(out_dir) / tag / (name + ".f32"), v);
      write_f32(fs::path(out_dir) / tag / "logits_last.f32", cap.logits);
      index[tag]["greedy"] = r.generated;
      index[tag]["prefill_tok_s"] = r.prefill_tok_s();
      index["backend"] = b.name();
      index["device"] = b.device();
    }
    std::ofstream(fs::path(out_dir) / "index.json") << index.dump(1);
    std::fprintf(stderr, "minfer-dump: wrote %s\n", out_dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer-dump: error: %s\n", e.what());
    return 1;
  }
}
