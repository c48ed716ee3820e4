#include "graph/build_graph.h"

#include <string>

namespace minfer {
namespace {

struct Builder {
  const Model& m;
  Graph g;
  int nt;

  int node(std::string name, Op op, std::vector<int> src, int64_t cols, int layer = -1,
           const WeightView* w = nullptr, DType dt = DType::F32, int64_t rows = -1) {
    Node n;
    n.name = std::move(name);
    n.op = op;
    n.src = std::move(src);
    n.shape = {rows < 0 ? nt : rows, cols};
    n.dtype = dt;
    n.layer = layer;
    if (w) {
      n.weight = w->name;
      n.weight_type = w->type;
    }
    return g.add(std::move(n));
  }

  // x @ W^T, then a separate bias add when the family has one (fusion folds it in).
  int linear(const std::string& name, int x, const WeightView& w, const WeightView& b, int layer) {
    int mm = node(name, Op::MatMul, {x}, w.rows, layer, &w);
    if (!b.present()) return mm;
    int add = node(name + "_bias", Op::AddBias, {mm}, w.rows, layer);
    g.nodes[static_cast<size_t>(add)].bias = b.name;
    return add;
  }
};

}  // namespace

Graph build_graph(const Model& m, Phase phase, int n_tokens) {
  const HParams& h = m.hp;
  const ArchitectureTraits& arch = traits(h.arch);
  const Op rope = arch.rope == RopeMode::NeoX ? Op::Rope : Op::RopeNormal;
  const WeightView* rope_freqs = m.rope_freqs.present() ? &m.rope_freqs : nullptr;
  Builder b{m, Graph{}, n_tokens};
  b.g.phase = phase;
  b.g.n_tokens = n_tokens;
  int tokens = b.node("tokens", Op::Input, {}, 1, -1, nullptr, DType::I32);
  int positions = b.node("positions", Op::Input, {}, 1, -1, nullptr, DType::I32);
  // Inputs are integer ids fed by the executor, not activations: nothing to summarize.
  b.g.nodes[static_cast<size_t>(tokens)].has_output = false;
  b.g.nodes[static_cast<size_t>(positions)].has_output = false;
  int x = b.node("token_embd", Op::GetRows, {tokens}, h.n_embd, -1, &m.token_embd);
  for (int l = 0; l < static_cast<int>(h.n_layer); ++l) {
    const LayerWeights& w = m.layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    int an = b.node(p + "attn_norm", Op::RmsNorm, {x}, h.n_embd, l, &w.attn_norm);
    int q = b.linear(p + "attn_q", an, w.wq, w.bq, l);
    int k = b.linear(p + "attn_k", an, w.wk, w.bk, l);
    int v = b.linear(p + "attn_v", an, w.wv, w.bv, l);
    if (arch.qk_norm) {
      q = b.node(p + "attn_q_norm", Op::HeadRmsNorm, {q}, h.n_embd_q(), l, &w.q_norm);
      k = b.node(p + "attn_k_norm", Op::HeadRmsNorm, {k}, h.n_embd_kv(), l, &w.k_norm);
    }
    int qr = b.node(p + "q_rope", rope, {q, positions}, h.n_embd_q(), l, rope_freqs);
    int kr = b.node(p + "k_rope", rope, {k, positions}, h.n_embd_kv(), l, rope_freqs);
    int kv = b.node(p + "kv_store", Op::KvStore, {kr, v, positions}, 2 * h.n_embd_kv(), l);
    b.g.nodes[static_cast<size_t>(kv)].has_output = false;
    int at = b.node(p + "attn", Op::Attention, {qr, kv, positions}, h.n_embd_q(), l);
    int ao = b.node(p + "attn_output", Op::MatMul, {at}, h.n_embd, l, &w.wo);
    int r1 = b.node(p + "attn_residual", Op::Add, {x, ao}, h.n_embd, l);
    int fn = b.node(p + "ffn_norm", Op::RmsNorm, {r1}, h.n_embd, l, &w.ffn_norm);
    int gate = b.node(p + "ffn_gate", Op::MatMul, {fn}, h.n_ff, l, &w.w_gate);
    int up = b.node(p + "ffn_up", Op::MatMul, {fn}, h.n_ff, l, &w.w_up);
    int act = b.node(p + "ffn_silu", Op::Silu, {gate}, h.n_ff, l);
    int sw = b.node(p + "ffn_swiglu", Op::Mul, {act, up}, h.n_ff, l);
    int down = b.node(p + "ffn_down", Op::MatMul, {sw}, h.n_embd, l, &w.w_down);
    x = b.node(p + "ffn_residual", Op::Add, {r1, down}, h.n_embd, l);
  }
  // Only the last row needs logits: take it before the final norm.
  int last = b.node("last_row", Op::LastRow, {x}, h.n_embd, -1, nullptr, DType::F32, 1);
  int norm = b.node("result_norm", Op::RmsNorm, {last}, h.n_embd, -1, &m.output_norm, DType::F32, 1);
  b.node("logits", Op::Logits, {norm}, h.n_vocab, -1, &m.output, DType::F32, 1);
  return std::move(b.g);
}

void fuse(Graph& g) {
  auto rewire = [&](int from, int to) {
    for (auto& n : g.nodes)
      for (int& s : n.src)
        if (s == from && n.id != to) s = to;
  };
  for (auto& n : g.nodes) {
    if (!n.executed()) continue;
    if (n.op == Op::AddBias) {
      Node& mm = g.nodes[static_cast<size_t>(n.src[0])];
      if (mm.op != Op::MatMul || !mm.bias.empty()) continue;
      mm.bias = n.bias;
      mm.fused_from.push_back(n.name);
      n.fused_into = mm.id;
      n.has_output = false;
      rewire(n.id, mm.id);
    } else if (n.op == Op::Mul) {
      Node& act = g.nodes[static_cast<size_t>(n.src[0])];
      if (act.op != Op::Silu) continue;
      n.op = Op::SwiGLU;
      n.src = {act.src[0], n.src[1]};
      n.fused_from.push_back(act.name);
      act.fused_into = n.id;
      act.has_output = false;
    }
  }
  g.fused = true;
}

Graph make_graph(const Model& m, Phase phase, int n_tokens, bool fused) {
  Graph g = build_graph(m, phase, n_tokens);
  if (fused) fuse(g);
  return g;
}

}  // namespace minfer
