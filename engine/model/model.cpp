#include "model/model.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "quant/non_finite.h"
#include "quant/quant.h"

namespace minfer {
namespace {

// A NaN or Inf in a matrix spreads to every activation after it, and silently: refused at load.
// Quantized matrices cost one read per block (only their f16 scales can be non-finite), float
// ones a read of every value, split over the pool when there is one.
void check_finite_matrix(const GGUFFile& f, const GGUFTensorInfo& t, int64_t rows, int64_t cols, ThreadPool* pool) {
  const auto bad = find_non_finite(t.type, t.data, rows * cols, pool);
  if (!bad) return;
  if (is_quantized(t.type)) {
    const int64_t blocks_per_row = cols / info(t.type).block_elems;
    fail(f.path(), ": tensor '", t.name, "': block ", bad->index, " (row ", bad->index / blocks_per_row,
         ") has a non-finite ", bad->role, " (", bad->field, " = ", bad->value, ")");
  }
  fail(f.path(), ": tensor '", t.name, "' has a non-finite value (", bad->value, ") at row ", bad->index / cols,
       ", column ", bad->index % cols);
}

WeightView view(const GGUFFile& f, const std::string& name, int64_t rows, int64_t cols, ThreadPool* pool) {
  const GGUFTensorInfo* t = f.find_tensor(name);
  if (!t) fail(f.path(), ": tensor '", name, "' is missing");
  const int64_t r = t->ne.size() > 1 ? t->ne[1] : 1;
  bool ok = t->ne.size() <= 2 && t->ne[0] == cols && r == rows;
  if (!ok) {
    std::string got;
    for (size_t i = 0; i < t->ne.size(); ++i) got += (i ? ", " : "") + std::to_string(t->ne[i]);
    fail(f.path(), ": tensor '", name, "' has shape {", got, "}, expected {", cols,
         rows > 1 ? ", " + std::to_string(rows) : std::string(), "}");
  }
  if (info(t->type).activation_only)
    fail(f.path(), ": tensor '", name, "' has type ", minfer::name(t->type), ", which is not a weight type");
  if (rows == 1) {
    // Norm weights and biases: a NaN or Inf in one spreads to every activation after it.
    std::vector<float> v(static_cast<size_t>(cols));
    dequantize_row(t->type, t->data, v.data(), cols);
    for (int64_t i = 0; i < cols; ++i)
      if (!std::isfinite(v[static_cast<size_t>(i)]))
        fail(f.path(), ": tensor '", name, "' has a non-finite value (", v[static_cast<size_t>(i)], ") at element ", i);
  } else {
    check_finite_matrix(f, *t, rows, cols, pool);
  }
  WeightView w;
  w.name = name;
  w.type = t->type;
  w.rows = rows;
  w.cols = cols;
  w.data = t->data;
  w.row_bytes = row_bytes(t->type, cols);
  return w;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, ThreadPool* pool) {
  auto m = std::make_unique<Model>();
  m->file = GGUFFile::open(path);
  const GGUFFile& f = *m->file;
  m->hp = HParams::from_gguf(f);
  const HParams& h = m->hp;
  m->token_embd = view(f, "token_embd.weight", h.n_vocab, h.n_embd, pool);
  m->output_norm = view(f, "output_norm.weight", 1, h.n_embd, pool);
  m->output = h.tied_embeddings ? m->token_embd : view(f, "output.weight", h.n_vocab, h.n_embd, pool);
  if (f.find_tensor("rope_freqs.weight")) {
    m->rope_freqs = view(f, "rope_freqs.weight", 1, h.head_dim / 2, pool);
    std::vector<float> v(static_cast<size_t>(h.head_dim / 2));
    dequantize_row(m->rope_freqs.type, m->rope_freqs.data, v.data(), h.head_dim / 2);
    for (size_t i = 0; i < v.size(); ++i)  // divisors of the frequencies
      if (!(v[i] > 0)) fail(f.path(), ": tensor 'rope_freqs.weight' has a non-positive value (", v[i], ") at element ", i);
  }
  const ArchitectureTraits& arch = traits(h.arch);
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights w;
    w.attn_norm = view(f, p + "attn_norm.weight", 1, h.n_embd, pool);
    w.wq = view(f, p + "attn_q.weight", h.n_embd_q(), h.n_embd, pool);
    w.wk = view(f, p + "attn_k.weight", h.n_embd_kv(), h.n_embd, pool);
    w.wv = view(f, p + "attn_v.weight", h.n_embd_kv(), h.n_embd, pool);
    if (arch.qkv_bias) {
      w.bq = view(f, p + "attn_q.bias", 1, h.n_embd_q(), pool);
      w.bk = view(f, p + "attn_k.bias", 1, h.n_embd_kv(), pool);
      w.bv = view(f, p + "attn_v.bias", 1, h.n_embd_kv(), pool);
    }
    if (arch.qk_norm) {
      w.q_norm = view(f, p + "attn_q_norm.weight", 1, h.head_dim, pool);
      w.k_norm = view(f, p + "attn_k_norm.weight", 1, h.head_dim, pool);
    }
    w.wo = view(f, p + "attn_output.weight", h.n_embd, h.n_embd_q(), pool);
    w.ffn_norm = view(f, p + "ffn_norm.weight", 1, h.n_embd, pool);
    w.w_gate = view(f, p + "ffn_gate.weight", h.n_ff, h.n_embd, pool);
    w.w_up = view(f, p + "ffn_up.weight", h.n_ff, h.n_embd, pool);
    w.w_down = view(f, p + "ffn_down.weight", h.n_embd, h.n_ff, pool);
    m->layers.push_back(std::move(w));
  }
  return m;
}

const WeightView& Model::weight(const std::string& name) const {
  if (token_embd.name == name) return token_embd;
  if (output_norm.name == name) return output_norm;
  if (output.name == name) return output;
  if (rope_freqs.present() && rope_freqs.name == name) return rope_freqs;
  for (const auto& l : layers)
    for (const WeightView* w : {&l.attn_norm, &l.wq, &l.bq, &l.wk, &l.bk, &l.wv, &l.bv, &l.wo,
                                &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down, &l.q_norm, &l.k_norm})
      if (w->present() && w->name == name) return *w;
  fail(file->path(), ": no weight named '", name, "'");
}

std::vector<std::pair<std::string, std::string>> Model::weight_type_summary() const {
  std::map<std::string, std::set<std::string>> cls;
  cls["token_embd"].insert(name(token_embd.type));
  cls["output"].insert(name(output.type));
  cls["norm"].insert(name(output_norm.type));
  for (const auto& l : layers) {
    cls["attn_q"].insert(name(l.wq.type));
    cls["attn_k"].insert(name(l.wk.type));
    cls["attn_v"].insert(name(l.wv.type));
    cls["attn_output"].insert(name(l.wo.type));
    cls["ffn_gate"].insert(name(l.w_gate.type));
    cls["ffn_up"].insert(name(l.w_up.type));
    cls["ffn_down"].insert(name(l.w_down.type));
    cls["norm"].insert(name(l.attn_norm.type));
    cls["norm"].insert(name(l.ffn_norm.type));
    for (const WeightView* b : {&l.bq, &l.bk, &l.bv})
      if (b->present()) cls["bias"].insert(name(b->type));
    for (const WeightView* n : {&l.q_norm, &l.k_norm})
      if (n->present()) cls["norm"].insert(name(n->type));
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, types] : cls) {
    std::string s;
    for (const auto& t : types) s += (s.empty() ? "" : ",") + t;
    out.emplace_back(k, types.size() == 1 ? s : "mixed(" + s + ")");
  }
  return out;
}

}  // namespace minfer
