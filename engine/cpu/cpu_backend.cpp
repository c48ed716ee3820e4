#include "cpu/cpu_backend.h"

#include <chrono>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/membw.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"
#include "probes/summarize.h"
#include "quant/quant.h"

namespace minfer {

class CpuBackend::HostOutput final : public NodeOutput {
 public:
  HostOutput(const float* d, int64_t r, int64_t c) : data_(d), rows_(r), cols_(c) {}
  TensorSummary summarize(const SummarySpec& spec) const override {
    return summarize_host(data_, rows_, cols_, spec);
  }
  std::vector<float> to_host() const override {
    return std::vector<float>(data_, data_ + rows_ * cols_);
  }
  // The paired-trace metrics on the tensor in place (the defaults would copy it first).
  TensorCompare compare_to(const NodeOutput& ref, const CompareTolerance& tol) const override {
    const auto* r = dynamic_cast<const HostOutput*>(&ref);
    if (!r || r->rows_ * r->cols_ != rows_ * cols_) return NodeOutput::compare_to(ref, tol);
    return compare_host(data_, r->data_, rows_ * cols_, tol);
  }
  std::vector<Outlier> outliers(int k, const NodeOutput* ref) const override {
    if (!ref) return outliers_host(data_, rows_ * cols_, k, nullptr);
    return NodeOutput::outliers(k, ref);
  }
  BlockScales block_scales(int64_t cols, int block) const override {
    if (cols != cols_) return NodeOutput::block_scales(cols, block);
    return block_scales_host(data_, rows_, cols_, block);
  }

 private:
  const float* data_;
  int64_t rows_, cols_;
};

CpuBackend::CpuBackend(const Model& m, MatmulPath path, ThreadPool& pool)
    : m_(m), path_(path), pool_(pool) {}
CpuBackend::~CpuBackend() = default;

std::string CpuBackend::device() const {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2) + " (" + std::to_string(pool_.size()) + " threads)";
    }
  return "cpu (" + std::to_string(pool_.size()) + " threads)";
}

void CpuBackend::reserve_context(int64_t n_ctx) {
  if (n_ctx > m_.hp.n_ctx)
    fail("context of ", n_ctx, " tokens exceeds the model's limit of ", m_.hp.n_ctx, " (", architecture_name(m_.hp.arch), ".context_length)");
  if (n_ctx <= n_ctx_) return;
  const size_t per = static_cast<size_t>(m_.hp.n_embd_kv());
  k_cache_.resize(static_cast<size_t>(m_.hp.n_layer));
  v_cache_.resize(static_cast<size_t>(m_.hp.n_layer));
  for (size_t l = 0; l < k_cache_.size(); ++l) {
    k_cache_[l].resize(static_cast<size_t>(n_ctx) * per);
    v_cache_[l].resize(static_cast<size_t>(n_ctx) * per);
  }
  n_ctx_ = n_ctx;
}

void CpuBackend::begin(const Graph& g, const std::vector<int32_t>& tokens, int pos0) {
  if (static_cast<int>(tokens.size()) != g.n_tokens)
    fail("step feeds ", tokens.size(), " tokens to a graph built for ", g.n_tokens);
  if (pos0 + g.n_tokens > n_ctx_)
    fail("positions up to ", pos0 + g.n_tokens, " exceed the reserved context of ", n_ctx_, " tokens");
  tokens_ = tokens;
  positions_.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) positions_[i] = pos0 + static_cast<int32_t>(i);
  buf_.resize(g.nodes.size());
  outputs_.resize(g.nodes.size());
  for (const Node& n : g.nodes) {
    auto& b = buf_[static_cast<size_t>(n.id)];
    const size_t need = n.has_output ? static_cast<size_t>(n.rows() * n.cols()) : 0;
    if (b.size() != need) b.assign(need, 0.0f);
    outputs_[static_cast<size_t>(n.id)] =
        n.has_output ? std::make_unique<HostOutput>(b.data(), n.rows(), n.cols()) : nullptr;
  }
}

const float* CpuBackend::in(const Graph& g, const Node& n, size_t i) const {
  const Node& s = g.node(n.src.at(i));
  if (!s.has_output) fail("node '", n.name, "' reads '", s.name, "', which has no output buffer");
  return buf_[static_cast<size_t>(s.id)].data();
}

const float* CpuBackend::f32_weight(const std::string& name) {
  auto it = small_f32_.find(name);
  if (it != small_f32_.end()) return it->second.data();
  const WeightView& w = m_.weight(name);
  std::vector<float> v(static_cast<size_t>(w.rows * w.cols));
  cpu::weight_to_f32(w, v.data());
  return small_f32_.emplace(name, std::move(v)).first->second.data();
}

void CpuBackend::matmul(const Node& n, const float* x, float* y, const float* bias, MatmulPath path) {
  const WeightView& w = m_.weight(n.weight);
  // Decode (one row) always takes the quantized GEMV; MINFER_MMQ=0 switches prefill matmuls.
  if (path == MatmulPath::MMQ || n.rows() == 1)
    matmul_mmq(w.data, w.type, w.rows, w.cols, x, n.rows(), bias, y, pool_);
  else
    matmul_float(w.data, w.type, w.rows, w.cols, x, n.rows(), bias, y, pool_);
}

bool CpuBackend::quantizes_activation(const Node& n, MatmulPath path) const {
  return (path == MatmulPath::MMQ || n.rows() == 1) && is_quantized(m_.weight(n.weight).type);
}

std::string CpuBackend::matmul_kernel(const Node& n) const {
  const WeightType t = m_.weight(n.weight).type;
  if (quantizes_activation(n, path_)) return std::string("mmq (activations as ") + minfer::name(vec_dot_type(t)) + ")";
  if (path_ == MatmulPath::MMQ || n.rows() == 1) return "f32 dot";
  return "f32 gemm (weights dequantized per tile)";
}

int CpuBackend::activation_block(const Node& n) const {
  if ((n.op != Op::MatMul && n.op != Op::Logits) || !quantizes_activation(n, path_)) return 0;
  return info(vec_dot_type(m_.weight(n.weight).type)).block_elems;
}

const NodeOutput* CpuBackend::rerun_node(const Graph& g, const Node& n, MatmulPath path) {
  if (!n.executed() || !n.has_output || n.op == Op::Input) return nullptr;
  if (static_cast<size_t>(n.id) >= buf_.size()) fail("rerun_node: node '", n.name, "' is not in the last step");
  rerun_buf_.assign(static_cast<size_t>(n.rows() * n.cols()), 0.0f);
  run(g, n, rerun_buf_.data(), path);
  rerun_out_ = std::make_unique<HostOutput>(rerun_buf_.data(), n.rows(), n.cols());
  return rerun_out_.get();
}

void CpuBackend::run(const Graph& g, const Node& n, float* y, MatmulPath path) {
  const int64_t rows = n.rows(), cols = n.cols();
  const HParams& h = m_.hp;
  switch (n.op) {
    case Op::Input:  // fed in begin(): tokens_ and positions_
      break;
    case Op::GetRows:
      cpu::get_rows(m_.weight(n.weight), tokens_.data(), rows, y);
      break;
    case Op::RmsNorm:
      cpu::rms_norm(in(g, n, 0), f32_weight(n.weight), y, rows, cols, static_cast<float>(h.rms_eps), pool_);
      break;
    case Op::MatMul:
    case Op::Logits:
      matmul(n, in(g, n, 0), y, n.bias.empty() ? nullptr : f32_weight(n.bias), path);
      break;
    case Op::AddBias:
      cpu::add_bias(in(g, n, 0), f32_weight(n.bias), y, rows, cols);
      break;
    case Op::HeadRmsNorm:
      cpu::head_rms_norm(in(g, n, 0), f32_weight(n.weight), y, rows, cols / h.head_dim, h.head_dim,
                         static_cast<float>(h.rms_eps), pool_);
      break;
    case Op::Rope:
    case Op::RopeNormal: {
      const float* divisors = n.weight.empty() ? nullptr : f32_weight(n.weight);
      const auto rope = n.op == Op::Rope ? cpu::rope_neox : cpu::rope_normal;
      rope(in(g, n, 0), positions_.data(), y, rows, cols / h.head_dim, h.head_dim, h.rope_base, pool_, divisors);
      break;
    }
    case Op::KvStore: {
      const size_t per = static_cast<size_t>(h.n_embd_kv());
      const float* k = in(g, n, 0);
      const float* v = in(g, n, 1);
      auto& kc = k_cache_.at(static_cast<size_t>(n.layer));
      auto& vc = v_cache_.at(static_cast<size_t>(n.layer));
      for (int64_t r = 0; r < g.n_tokens; ++r) {
        const size_t p = static_cast<size_t>(positions_[static_cast<size_t>(r)]);
        std::memcpy(kc.data() + p * per, k + r * static_cast<int64_t>(per), per * sizeof(float));
        std::memcpy(vc.data() + p * per, v + r * static_cast<int64_t>(per), per * sizeof(float));
      }
      break;
    }
    case Op::Attention:
      cpu::attention(in(g, n, 0), positions_.data(), k_cache_.at(static_cast<size_t>(n.layer)).data(),
                     v_cache_.at(static_cast<size_t>(n.layer)).data(), y, rows, h.n_head, h.n_head_kv,
                     h.head_dim, pool_);
      break;
    case Op::Add:
      cpu::add(in(g, n, 0), in(g, n, 1), y, rows * cols);
      break;
    case Op::Silu:
      cpu::silu(in(g, n, 0), y, rows * cols);
      break;
    case Op::Mul:
      cpu::mul(in(g, n, 0), in(g, n, 1), y, rows * cols);
      break;
    case Op::SwiGLU:
      cpu::swiglu(in(g, n, 0), in(g, n, 1), y, rows * cols);
      break;
    case Op::LastRow: {
      const Node& s = g.node(n.src[0]);
      std::memcpy(y, in(g, n, 0) + (s.rows() - 1) * cols, static_cast<size_t>(cols) * sizeof(float));
      break;
    }
  }
}

void CpuBackend::run_step(const Graph& g, const StepInfo& s) {
  using clock = std::chrono::steady_clock;
  begin(g, s.tokens, s.pos0);
  times_.assign(g.nodes.size(), NodeTime{});
  const auto t0 = clock::now();
  auto since = [&](clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };
  for (const Node& n : g.nodes) {
    if (!n.executed()) continue;
    const auto a = clock::now();
    run(g, n, n.has_output ? buf_[static_cast<size_t>(n.id)].data() : nullptr, path_);
    const double start = since(a);
    times_[static_cast<size_t>(n.id)] = NodeTime{start, since(clock::now()) - start};
  }
}

NodeTime CpuBackend::node_time(const Node& n) const {
  return static_cast<size_t>(n.id) < times_.size() ? times_[static_cast<size_t>(n.id)] : NodeTime{};
}

const NodeOutput* CpuBackend::output(const Node& n) const {
  return outputs_.at(static_cast<size_t>(n.id)).get();
}

double CpuBackend::read_bandwidth_gbs() { return measure_read_bandwidth_gbs(pool_); }

void CpuBackend::read_logits(const Graph& g, std::vector<float>& out) {
  const Node& last = g.nodes.back();
  const auto& b = buf_[static_cast<size_t>(last.id)];
  out.assign(b.end() - last.cols(), b.end());
}

}  // namespace minfer
