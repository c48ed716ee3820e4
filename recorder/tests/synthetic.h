// Synthetic runs for the recorder tests: a Qwen2-shaped graph (fused biases and SwiGLU, a KV
// store without output), seeded random node outputs with a massive-activation channel, and a
// driver that calls an Observer exactly as the executor and the generation loop do.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/observer.h"
#include "graph/graph.h"
#include "probes/summarize.h"

namespace minfer::synth {

struct Shapes {
  int n_layer = 2, n_embd = 64, n_kv = 16, n_ff = 128, n_vocab = 512;
  static Shapes qwen05b() { return {24, 896, 128, 4864, 151936}; }
};

// A node output held in host memory (what a CPU backend hands the observer).
class HostOutput : public NodeOutput {
 public:
  HostOutput(std::vector<float> v, int64_t rows, int64_t cols) : v_(std::move(v)), rows_(rows), cols_(cols) {}
  TensorSummary summarize(const SummarySpec& spec) const override { return summarize_host(v_.data(), rows_, cols_, spec); }
  std::vector<float> to_host() const override { return v_; }

 private:
  std::vector<float> v_;
  int64_t rows_, cols_;
};

inline Graph make_graph(Phase phase, int nt, const Shapes& s) {
  Graph g;
  g.phase = phase;
  g.n_tokens = nt;
  g.fused = true;
  auto add = [&](std::string name, Op op, int64_t cols, std::vector<int> src, int layer = -1,
                 std::string weight = "", std::optional<WeightType> wt = std::nullopt) {
    Node n;
    n.name = std::move(name);
    n.op = op;
    n.shape = {nt, cols};
    n.src = std::move(src);
    n.layer = layer;
    n.weight = std::move(weight);
    n.weight_type = wt;
    return g.add(std::move(n));
  };
  auto fuse = [&](int into, std::string name, Op op, int64_t cols, int layer) {
    int id = add(std::move(name), op, cols, {into}, layer);
    g.nodes[id].fused_into = into;
    g.nodes[id].has_output = false;
    g.nodes[into].fused_from.push_back(g.nodes[id].name);
    return id;
  };
  int tok = add("tokens", Op::Input, 1, {});
  g.nodes[tok].dtype = DType::I32;
  int x = add("token_embd", Op::GetRows, s.n_embd, {tok}, -1, "token_embd.weight", WeightType::Q8_0);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    int norm = add(p + "attn_norm", Op::RmsNorm, s.n_embd, {x}, l, p + "attn_norm.weight", WeightType::F32);
    int q = add(p + "attn_q", Op::MatMul, s.n_embd, {norm}, l, p + "attn_q.weight", WeightType::Q4_0);
    g.nodes[q].bias = p + "attn_q.bias";
    fuse(q, p + "attn_q_bias", Op::AddBias, s.n_embd, l);
    int k = add(p + "attn_k", Op::MatMul, s.n_kv, {norm}, l, p + "attn_k.weight", WeightType::Q4_0);
    fuse(k, p + "attn_k_bias", Op::AddBias, s.n_kv, l);
    int v = add(p + "attn_v", Op::MatMul, s.n_kv, {norm}, l, p + "attn_v.weight", WeightType::Q8_0);
    fuse(v, p + "attn_v_bias", Op::AddBias, s.n_kv, l);
    int qr = add(p + "attn_q_rope", Op::Rope, s.n_embd, {q}, l);
    int kr = add(p + "attn_k_rope", Op::Rope, s.n_kv, {k}, l);
    int kv = add(p + "kv_store", Op::KvStore, s.n_kv, {kr, v}, l);
    g.nodes[kv].has_output = false;
    int att = add(p + "attn", Op::Attention, s.n_embd, {qr, kv}, l);
    int o = add(p + "attn_output", Op::MatMul, s.n_embd, {att}, l, p + "attn_output.weight", WeightType::Q4_0);
    int r1 = add(p + "attn_residual", Op::Add, s.n_embd, {x, o}, l);
    int fn = add(p + "ffn_norm", Op::RmsNorm, s.n_embd, {r1}, l, p + "ffn_norm.weight", WeightType::F32);
    int gate = add(p + "ffn_gate", Op::MatMul, s.n_ff, {fn}, l, p + "ffn_gate.weight", WeightType::Q4_0);
    int up = add(p + "ffn_up", Op::MatMul, s.n_ff, {fn}, l, p + "ffn_up.weight", WeightType::Q4_0);
    int silu = add(p + "ffn_silu", Op::Silu, s.n_ff, {gate}, l);
    int mul = add(p + "ffn_mul", Op::Mul, s.n_ff, {silu, up}, l);
    int sw = add(p + "ffn_swiglu", Op::SwiGLU, s.n_ff, {gate, up}, l);
    for (int f : {silu, mul}) {
      g.nodes[f].fused_into = sw;
      g.nodes[f].has_output = false;
      g.nodes[sw].fused_from.push_back(g.nodes[f].name);
    }
    int down = add(p + "ffn_down", Op::MatMul, s.n_embd, {sw}, l, p + "ffn_down.weight", WeightType::Q6_K);
    x = add(p + "ffn_residual", Op::Add, s.n_embd, {r1, down}, l);
  }
  int rn = add("result_norm", Op::RmsNorm, s.n_embd, {x}, -1, "output_norm.weight", WeightType::F32);
  int last = add("last_row", Op::LastRow, s.n_embd, {rn});
  g.nodes[last].shape = {1, s.n_embd};
  int lg = add("logits", Op::Logits, s.n_vocab, {last}, -1, "token_embd.weight", WeightType::Q8_0);
  g.nodes[lg].shape = {1, s.n_vocab};
  return g;
}

struct Run {
  Shapes shapes;
  std::vector<int32_t> prompt = {9707, 11, 1879, 0, 7};
  int n_decode = 3;
  uint64_t seed = 1;
  // Changes a node's values before the observer sees them (inject errors, NaN).
  std::function<void(int step, const Node&, std::vector<float>&)> perturb;
  std::function<void(int step)> after_step;  // e.g. sleep (kill test)
  // A paired run: the observer also sees a reference (the values scaled by 1 + 1e-3 (layer + 2))
  // and, for matmuls, a local reference (scaled by 1 + 5e-4), as Executor and generate() show them.
  bool paired = false;
  // The logits as a backend's own summary (StepLogits::summary, top 20) instead of the row, as
  // the CUDA backend hands them over in a greedy traced run.
  bool summarised_logits = false;
};

inline std::vector<float> node_values(const Run& r, int step, const Node& n) {
  std::mt19937_64 rng(r.seed * 1000003ull + static_cast<uint64_t>(step) * 7919ull + static_cast<uint64_t>(n.id));
  std::normal_distribution<float> nd(0.f, 1.f + 0.25f * static_cast<float>(std::max(n.layer, 0)));
  std::vector<float> v(static_cast<size_t>(n.rows() * n.cols()));
  for (auto& x : v) x = nd(rng);
  // A massive-activation channel in the residual stream, as real Qwen2 has.
  if (n.op == Op::Add && n.cols() > 7)
    for (int64_t row = 0; row < n.rows(); ++row) v[static_cast<size_t>(row * n.cols() + 7)] = 30.f;
  return v;
}

inline std::vector<float> logits_values(const Run& r, int step, int64_t n_vocab) {
  std::mt19937_64 rng(r.seed * 31ull + static_cast<uint64_t>(step) + 17);
  std::normal_distribution<float> nd(0.f, 3.f);
  std::vector<float> v(static_cast<size_t>(n_vocab));
  for (auto& x : v) x = nd(rng);
  return v;
}

// Calls obs as the generation loop does: on_graph(prefill), the prefill step, on_graph(decode)
// before the first decode step, then one step per decoded token (greedy).
inline void run(Observer& obs, const Run& r) {
  const Graph prefill = make_graph(Phase::Prefill, static_cast<int>(r.prompt.size()), r.shapes);
  const Graph decode = make_graph(Phase::Decode, 1, r.shapes);
  obs.on_graph(prefill);
  int32_t next = -1;
  int pos = 0;
  for (int step = 0; step <= r.n_decode; ++step) {
    const Graph& g = step == 0 ? prefill : decode;
    if (step == 1) obs.on_graph(decode);
    StepInfo s;
    s.phase = g.phase;
    s.step = step;
    s.pos0 = pos;
    s.tokens = step == 0 ? r.prompt : std::vector<int32_t>{next};
    obs.on_step_begin(g, s);
    for (const Node& n : g.nodes) {
      if (!obs.wants(n)) continue;
      const NodeTime t{1e-5 * n.id, 1e-5 * (1 + n.id % 7)};
      if (!n.executed() || !n.has_output) {
        obs.on_node_view(n, NodeView{nullptr, n.executed() ? t : NodeTime{0, 0}});
        continue;
      }
      std::vector<float> v = node_values(r, step, n);
      if (r.perturb) r.perturb(step, n, v);
      if (!r.paired) {
        HostOutput out(std::move(v), n.rows(), n.cols());
        obs.on_node_view(n, NodeView{&out, t});
        continue;
      }
      const bool matmul = n.op == Op::MatMul || n.op == Op::Logits;
      std::vector<float> ref = v, local = v;
      for (auto& x : ref) x *= 1.f + 1e-3f * static_cast<float>(n.layer + 2);
      for (auto& x : local) x *= matmul ? 1.f + 5e-4f : 1.f;
      HostOutput out(std::move(v), n.rows(), n.cols()), ref_out(std::move(ref), n.rows(), n.cols()),
          local_out(std::move(local), n.rows(), n.cols());
      NodeView view{&out, t};
      view.ref = &ref_out;
      view.local_ref = &local_out;
      obs.on_node_view(n, view);
    }
    const auto lg = logits_values(r, step, r.shapes.n_vocab);
    next = static_cast<int32_t>(std::max_element(lg.begin(), lg.end()) - lg.begin());
    if (r.paired) {
      std::vector<float> ref_lg = lg;
      for (size_t i = 0; i < ref_lg.size(); ++i) ref_lg[i] += 0.01f * static_cast<float>(i % 7);
      StepLogits l;
      l.logits = lg.data();
      l.n_vocab = static_cast<int64_t>(lg.size());
      l.chosen = next;
      l.sampled = {lg.data(), 0.f, 1.f};
      l.ref_logits = ref_lg.data();
      l.ref_chosen = static_cast<int32_t>(std::max_element(ref_lg.begin(), ref_lg.end()) - ref_lg.begin());
      l.ref_sampled = {ref_lg.data(), 0.f, 1.f};
      obs.on_step_logits(s, l);
    } else if (r.summarised_logits) {
      const LogitsSummary ls = summarize_logits(lg.data(), static_cast<int64_t>(lg.size()), next, 20);
      StepLogits l;
      l.summary = &ls;
      l.n_vocab = ls.n_vocab;
      l.chosen = next;
      l.sampled = {nullptr, 0.f, 1.f};
      obs.on_step_logits(s, l);
    } else {
      StepLogits l;  // what the sampler drew from is not known
      l.logits = lg.data();
      l.n_vocab = static_cast<int64_t>(lg.size());
      l.chosen = next;
      obs.on_step_logits(s, l);
    }
    obs.on_step_end(s, 1e-3 * (step == 0 ? 5 : 1));
    pos += static_cast<int>(s.tokens.size());
    if (r.after_step) r.after_step(step);
  }
}

inline nlohmann::json meta(const std::string& sha256 = std::string(64, 'a'), const std::string& path = "mmq") {
  return {{"model", {{"file", "synthetic.gguf"}, {"sha256", sha256}, {"size_bytes", 1234}, {"architecture", "qwen2"},
                     {"name", "synthetic"}, {"hparams", {{"n_layer", 2}}}, {"weight_types", {{"attn_q", "Q4_0"}}}}},
          {"backend", "cpu"}, {"device", "test"}, {"matmul_path", path}, {"cuda_graph", false}, {"threads", 1},
          {"prompt", "Hello, world!"}, {"sampler", {{"temperature", 0}, {"seed", 1}}}};
}

// meta() of a paired trace (meta.compare against the f32 path).
inline nlohmann::json paired_meta() {
  nlohmann::json m = meta();
  m["compare"] = {{"path", "f32"}, {"backend", "cpu"}, {"mode", "lockstep"}, {"teacher", "a"},
                  {"tolerance", {{"abs", 1e-3}, {"rel", 1e-2}}}, {"local", true}};
  return m;
}

inline std::string token_text(int32_t id) {
  if (id == 11) return ",";
  if (id == 0) return std::string("\xE4\xBD", 2);  // a partial UTF-8 sequence, as byte-level BPE pieces can be
  return "t" + std::to_string(id);
}

}  // namespace minfer::synth
