// The CPU backend against a plain float64 forward pass, layer by layer, on generated tiny
// models: prefill and several decode steps, both matmul paths, f32 and q8_0 weights; qwen2, and
// qwen3 (no biases, per-head Q/K RMSNorm, attention wider than n_embd) and llama (adjacent-pair
// RoPE with rope_freqs divisors) written out from the families' definitions.
#include <cmath>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "exec/generate.h"
#include "model/model.h"
#include "quant/quant.h"
#include "test_models.h"

using namespace minfer;

namespace {

// Plain double-precision forward over the whole sequence; returns per-layer residuals
// (after each block) for every position and the last position's logits.
struct RefOut {
  std::vector<std::vector<double>> layer_out;  // [layer][pos*n_embd]
  std::vector<double> logits;
};

std::vector<double> deq(const WeightView& w) {
  std::vector<float> f(static_cast<size_t>(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) dequantize_row(w.type, w.data + r * w.row_bytes, f.data() + r * w.cols, w.cols);
  return {f.begin(), f.end()};
}

std::vector<double> linear(const std::vector<double>& x, int64_t nt, const std::vector<double>& W,
                           int64_t out, int64_t in, const std::vector<double>* b) {
  std::vector<double> y(static_cast<size_t>(nt * out));
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double s = b ? (*b)[static_cast<size_t>(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[static_cast<size_t>(t * in + i)] * W[static_cast<size_t>(o * in + i)];
      y[static_cast<size_t>(t * out + o)] = s;
    }
  return y;
}

std::vector<double> rmsnorm(const std::vector<double>& x, int64_t nt, int64_t d, const std::vector<double>& w, double eps) {
  std::vector<double> y(x.size());
  for (int64_t t = 0; t < nt; ++t) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += x[static_cast<size_t>(t * d + i)] * x[static_cast<size_t>(t * d + i)];
    double s = 1.0 / std::sqrt(ss / d + eps);
    for (int64_t i = 0; i < d; ++i) y[static_cast<size_t>(t * d + i)] = x[static_cast<size_t>(t * d + i)] * s * w[static_cast<size_t>(i)];
  }
  return y;
}

// NeoX pairs (i, i + hd/2), or adjacent pairs (2i, 2i+1) for llama; divisors: rope_freqs or empty.
void rope(std::vector<double>& x, int64_t nt, int64_t heads, int64_t hd, double base, bool adjacent,
          const std::vector<double>& divisors) {
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < hd / 2; ++i) {
        double a = t * std::pow(base, -2.0 * i / hd) / (divisors.empty() ? 1.0 : divisors[static_cast<size_t>(i)]);
        double* p = &x[static_cast<size_t>((t * heads + h) * hd)];
        const int64_t ia = adjacent ? 2 * i : i, ib = adjacent ? 2 * i + 1 : i + hd / 2;
        double x0 = p[ia], x1 = p[ib];
        p[ia] = x0 * std::cos(a) - x1 * std::sin(a);
        p[ib] = x0 * std::sin(a) + x1 * std::cos(a);
      }
}

RefOut reference(const Model& m, const std::vector<int32_t>& ids) {
  const HParams& h = m.hp;
  const int64_t nt = static_cast<int64_t>(ids.size()), d = h.n_embd, kv = h.n_embd_kv(), hd = h.head_dim;
  const int64_t dq = h.n_embd_q();
  const bool adjacent = h.arch == Architecture::Llama;
  const std::vector<double> divisors = m.rope_freqs.present() ? deq(m.rope_freqs) : std::vector<double>{};
  RefOut r;
  auto emb = deq(m.token_embd);
  std::vector<double> x(static_cast<size_t>(nt * d));
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t i = 0; i < d; ++i) x[static_cast<size_t>(t * d + i)] = emb[static_cast<size_t>(ids[static_cast<size_t>(t)] * d + i)];
  for (const LayerWeights& L : m.layers) {
    auto a = rmsnorm(x, nt, d, deq(L.attn_norm), h.rms_eps);
    const bool bias = L.bq.present();
    auto bq = bias ? deq(L.bq) : std::vector<double>{}, bk = bias ? deq(L.bk) : std::vector<double>{},
         bv = bias ? deq(L.bv) : std::vector<double>{};
    auto q = linear(a, nt, deq(L.wq), dq, d, bias ? &bq : nullptr);
    auto k = linear(a, nt, deq(L.wk), kv, d, bias ? &bk : nullptr);
    auto v = linear(a, nt, deq(L.wv), kv, d, bias ? &bv : nullptr);
    if (L.q_norm.present()) {  // qwen3: every head normalized on its own
      q = rmsnorm(q, nt * h.n_head, hd, deq(L.q_norm), h.rms_eps);
      k = rmsnorm(k, nt * h.n_head_kv, hd, deq(L.k_norm), h.rms_eps);
    }
    rope(q, nt, h.n_head, hd, h.rope_base, adjacent, divisors);
    rope(k, nt, h.n_head_kv, hd, h.rope_base, adjacent, divisors);
    std::vector<double> att(static_cast<size_t>(nt * dq));
    for (int64_t t = 0; t < nt; ++t)
      for (int64_t hh = 0; hh < h.n_head; ++hh) {
        int64_t g = hh / (h.n_head / h.n_head_kv);
        std::vector<double> s(static_cast<size_t>(t + 1));
        double mx = -1e300, sum = 0;
        for (int64_t u = 0; u <= t; ++u) {
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += q[static_cast<size_t>(t * dq + hh * hd + i)] * k[static_cast<size_t>(u * kv + g * hd + i)];
          s[static_cast<size_t>(u)] = dot / std::sqrt(double(hd));
          mx = std::max(mx, s[static_cast<size_t>(u)]);
        }
        for (auto& e : s) sum += e = std::exp(e - mx);
        for (int64_t u = 0; u <= t; ++u)
          for (int64_t i = 0; i < hd; ++i)
            att[static_cast<size_t>(t * dq + hh * hd + i)] += s[static_cast<size_t>(u)] / sum * v[static_cast<size_t>(u * kv + g * hd + i)];
      }
    auto o = linear(att, nt, deq(L.wo), d, dq, nullptr);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    auto f = rmsnorm(x, nt, d, deq(L.ffn_norm), h.rms_eps);
    auto gate = linear(f, nt, deq(L.w_gate), h.n_ff, d, nullptr);
    auto up = linear(f, nt, deq(L.w_up), h.n_ff, d, nullptr);
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
    auto down = linear(gate, nt, deq(L.w_down), d, h.n_ff, nullptr);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    r.layer_out.push_back(x);
  }
  std::vector<double> last(x.end() - d, x.end());
  auto n = rmsnorm(last, 1, d, deq(m.output_norm), h.rms_eps);
  r.logits = linear(n, 1, deq(m.output), h.n_vocab, d, nullptr);
  return r;
}

// Captures each layer's residual output and the step's logits.
struct Capture : Observer {
  std::map<std::string, std::vector<float>> nodes;
  std::vector<float> logits;
  void on_node_view(const Node& n, const NodeView& v) override {
    if (v.out && n.name.find("ffn_residual") != std::string::npos) nodes[n.name] = v.out->to_host();
  }
  void on_step_logits(const StepInfo&, const StepLogits& l) override { logits.assign(l.logits, l.logits + l.n_vocab); }
};

double rel_err(const std::vector<float>& got, const double* ref, size_t n) {
  double md = 0, mr = 0;
  for (size_t i = 0; i < n; ++i) {
    md = std::max(md, std::abs(got[i] - ref[i]));
    mr = std::max(mr, std::abs(ref[i]));
  }
  return md / mr;
}

// tol: prefill hidden states; tol_gemv: logits and decode steps, which always take the quantized
// GEMV (one row), so on quantized weights they carry the 8-bit activation rounding in both paths.
// Ids of the Qwen vocabulary, or (prompt_llama) of Llama 3's, BOS first.
const std::vector<int32_t> kPromptQwen = {9707, 11, 847, 829, 374, 264, 1273, 13, 151644, 872};
const std::vector<int32_t> kPromptLlama = {128000, 9906, 1917, 11, 433, 596, 220, 4513, 1774, 41776};

void check_model(const std::string& path, MatmulPath mp, double tol, double tol_gemv) {
  auto m = Model::load(path);
  const std::vector<int32_t>& prompt = m->hp.arch == Architecture::Llama ? kPromptLlama : kPromptQwen;
  CpuBackend b(*m, mp);
  Capture cap;
  GenerateOptions g;
  g.n_predict = 0;
  generate(*m, b, nullptr, prompt, g, &cap);
  RefOut ref = reference(*m, prompt);
  const int64_t d = m->hp.n_embd;
  for (int64_t l = 0; l < m->hp.n_layer; ++l) {
    auto& got = cap.nodes.at("blk." + std::to_string(l) + ".ffn_residual");
    double e = rel_err(got, ref.layer_out[static_cast<size_t>(l)].data(), got.size());
    std::printf("  %s %s layer %lld prefill: max|err|/max|ref| = %.3g\n", path.c_str(), b.matmul_path_label().c_str(), (long long)l, e);
    EXPECT_LT(e, tol) << "layer " << l;
  }
  double el = rel_err(cap.logits, ref.logits.data(), ref.logits.size());
  std::printf("  logits: %.3g\n", el);
  EXPECT_LT(el, tol_gemv);
  // Decode steps: continue greedily and compare the last position against a full recompute.
  std::vector<int32_t> seq = prompt;
  GenerateOptions gd;
  gd.n_predict = 4;
  gd.stop_at_eog = false;
  CpuBackend b2(*m, mp);
  Capture cap2;
  auto r = generate(*m, b2, nullptr, prompt, gd, &cap2);
  seq.insert(seq.end(), r.generated.begin(), r.generated.end() - 1);
  RefOut ref2 = reference(*m, seq);
  double ed = rel_err(cap2.logits, ref2.logits.data(), ref2.logits.size());
  auto& last_layer = cap2.nodes.at("blk." + std::to_string(m->hp.n_layer - 1) + ".ffn_residual");
  double eh = rel_err(last_layer, ref2.layer_out.back().data() + (seq.size() - 1) * d, static_cast<size_t>(d));
  std::printf("  decode step %zu: logits %.3g, last layer %.3g\n", r.decode_s.size(), ed, eh);
  EXPECT_LT(ed, tol_gemv);
  EXPECT_LT(eh, tol_gemv);
}

}  // namespace

TEST(ReferenceF64, TinyF32FloatPath) {
  auto p = minfer::testing::generated_model("ref-tiny-f32", "tiny", GenWeights::F32);
  MINFER_REQUIRE_MODEL(p);
  check_model(p, MatmulPath::Float, 1e-4, 1e-4);
}

TEST(ReferenceF64, TinyF32MmqPath) {
  auto p = minfer::testing::generated_model("ref-tiny-f32", "tiny", GenWeights::F32);
  MINFER_REQUIRE_MODEL(p);
  check_model(p, MatmulPath::MMQ, 1e-4, 1e-4);  // float weights: MMQ uses the float dot
}

TEST(ReferenceF64, TinyQ8_0BothPaths) {
  auto p = minfer::testing::generated_model("ref-tiny-q8", "tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(p);
  check_model(p, MatmulPath::Float, 1e-4, 3e-2);  // same dequantized weights as the reference
  check_model(p, MatmulPath::MMQ, 3e-2, 3e-2);  // 8-bit activations: bounded, visible error
}

TEST(ReferenceF64, TinyQ4KMixMmq) {
  auto p = minfer::testing::generated_model("ref-tiny-q4km", "tiny", GenWeights::Q4_K_M);
  MINFER_REQUIRE_MODEL(p);
  check_model(p, MatmulPath::MMQ, 3e-2, 3e-2);
}

TEST(ReferenceF64, Qwen3TinyF32AndQ8_0) {
  auto f = minfer::testing::generated_model("ref-qwen3-tiny-f32", "qwen3-tiny", GenWeights::F32);
  MINFER_REQUIRE_MODEL(f);
  check_model(f, MatmulPath::Float, 1e-4, 1e-4);
  auto q = minfer::testing::generated_model("ref-qwen3-tiny-q8", "qwen3-tiny", GenWeights::Q8_0);
  check_model(q, MatmulPath::Float, 1e-4, 3e-2);
  check_model(q, MatmulPath::MMQ, 3e-2, 3e-2);
}

TEST(ReferenceF64, LlamaTinyF32AndQ8_0) {
  auto f = minfer::testing::generated_model("ref-llama-tiny-f32", "llama-tiny", GenWeights::F32);
  MINFER_REQUIRE_MODEL(f);
  check_model(f, MatmulPath::Float, 1e-4, 1e-4);
  auto q = minfer::testing::generated_model("ref-llama-tiny-q8", "llama-tiny", GenWeights::Q8_0);
  check_model(q, MatmulPath::Float, 1e-4, 3e-2);
  check_model(q, MatmulPath::MMQ, 3e-2, 3e-2);
}
