#include "node_work.h"

#include <algorithm>

#include "core/weight_type.h"
#include "format/trace_keys.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

constexpr double kF32 = 4;  // activations are f32, integer inputs (ids, positions) i32

int64_t dim(const json& node, size_t i) {
  const json& s = node["shape"];
  return s.is_array() && s.size() > i && s[i].is_number_integer() ? s[i].get<int64_t>() : 0;
}

// Source i of a node, or null when the graph does not hold it (a reader of any file, not only
// validated ones, must not index past the array).
const json* source(const json& nodes, const json& node, size_t i) {
  auto it = node.find("src");
  if (it == node.end() || !it->is_array() || it->size() <= i || !(*it)[i].is_number_integer()) return nullptr;
  const int64_t id = (*it)[i].get<int64_t>();
  return id >= 0 && static_cast<size_t>(id) < nodes.size() ? &nodes[static_cast<size_t>(id)] : nullptr;
}

std::string str(const json& node, const char* key) {
  auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Bytes of `rows` rows of `cols` elements stored as `type` (block sizes from core/weight_type.h);
// an unknown type or a width that is not whole blocks counts as f32.
double stored_bytes(const std::string& type, int64_t rows, int64_t cols) {
  const auto t = weight_type_from_name(type);
  if (!t || cols % info(*t).block_elems != 0) return kF32 * static_cast<double>(rows * cols);
  return static_cast<double>(rows) * static_cast<double>(row_bytes(*t, cols));
}

bool quantized(const std::string& type) {
  const auto t = weight_type_from_name(type);
  return t && is_quantized(*t);
}

// The kernel a matmul node ran with, from meta.matmul_kernels, "" when not recorded.
std::string matmul_kernel(const json& node, const StepShape& s) {
  if (!s.matmul_kernels || !s.matmul_kernels->is_object()) return {};
  auto it = s.matmul_kernels->find(str(node, "name"));
  return it != s.matmul_kernels->end() && it->is_string() ? it->get<std::string>() : std::string();
}

// How a matmul's weights are read and its dots computed. The recorded kernel decides when the
// trace has it ("W16 cache": the CUDA float path reads an f16 copy of a quantized weight;
// "Q8_1"/"Q8_0" activations: int8 dots); otherwise the path: a quantized weight runs int8 dots on
// the MMQ path and in every decode GEMV, f16 tensor cores on the CUDA float path, f32 on the CPU's.
struct MatmulPath {
  bool f16_copy;
  OpsKind kind;
};

MatmulPath matmul_path(const json& node, const StepShape& s) {
  const std::string wt = str(node, "weight_type"), k = matmul_kernel(node, s);
  if (!k.empty()) {
    if (k.find("W16") != std::string::npos) return {quantized(wt), OpsKind::F16};
    if (k.find("Q8_") != std::string::npos) return {false, OpsKind::Int8};
    if (k.find("f16") != std::string::npos) return {false, OpsKind::F16};
    return {false, OpsKind::F32};
  }
  if (quantized(wt)) {
    if (s.matmul_path == "mmq" || s.phase == "decode") return {false, OpsKind::Int8};
    if (s.backend == "cuda") return {true, OpsKind::F16};
    return {false, OpsKind::F32};
  }
  return {false, wt == "F16" || wt == "BF16" ? OpsKind::F16 : OpsKind::F32};
}

NodeWork matmul_work(const json& nodes, const json& node, const StepShape& s) {
  const int64_t m = dim(node, 0), n = dim(node, 1);
  const json* src = source(nodes, node, 0);
  const int64_t k = src ? dim(*src, 1) : 0;
  const MatmulPath p = matmul_path(node, s);
  const double weight = p.f16_copy ? 2.0 * static_cast<double>(n * k) : stored_bytes(str(node, "weight_type"), n, k);
  NodeWork w{weight + kF32 * static_cast<double>(m * k + m * n), 2.0 * static_cast<double>(m * n * k), p.kind};
  if (!str(node, "bias").empty()) {  // the bias epilogue: one f32 row read, one add per output
    w.bytes += kF32 * static_cast<double>(n);
    w.ops += static_cast<double>(m * n);
  }
  return w;
}

// Causal attention of n queries at positions pos..pos+n-1 over the cache: query i sees pos+i+1
// keys; per (head, query, key) QK is head_dim multiply-adds and PV another head_dim. The cache
// (f32 K and V, pos+n rows of n_head_kv*head_dim) is read once; softmax is not counted.
NodeWork attention_work(const json& node, const StepShape& s) {
  const int64_t n = dim(node, 0), width = dim(node, 1);
  const double keys = static_cast<double>(n) * static_cast<double>(s.pos) + static_cast<double>(n * (n + 1)) / 2;
  const double kv_rows = static_cast<double>(s.pos + n);
  const double kv_width = static_cast<double>(s.n_head_kv) * s.head_dim;
  NodeWork w;
  w.bytes = kF32 * (2.0 * static_cast<double>(n * width) + 2.0 * kv_rows * kv_width);
  w.ops = 4.0 * s.head_dim * s.n_head * keys;
  w.kind = s.backend == "cuda" && n > 1 ? OpsKind::F16 : OpsKind::F32;  // the CUDA prefill kernel uses f16 mma
  return w;
}

// Reads every source's output once, writes its own: the rule for an op this file does not know.
NodeWork tensors_only(const json& nodes, const json& node) {
  NodeWork w;
  w.known = false;
  w.bytes = kF32 * static_cast<double>(dim(node, 0) * dim(node, 1));
  for (size_t i = 0; const json* src = source(nodes, node, i); ++i)
    w.bytes += kF32 * static_cast<double>(dim(*src, 0) * dim(*src, 1));
  return w;
}

}  // namespace

const char* ops_kind_name(OpsKind k) {
  switch (k) {
    case OpsKind::Int8: return "int8";
    case OpsKind::F16: return "f16";
    case OpsKind::F32: return "f32";
  }
  return "f32";
}

StepShape step_shape(const json& meta, const json& step) {
  StepShape s;
  const json hp = meta.contains(keys::meta::kModel) ? meta[keys::meta::kModel].value(keys::model::kHparams, json::object()) : json::object();
  s.n_head = hp.value("n_head", 0);
  s.n_head_kv = hp.value("n_head_kv", 0);
  s.head_dim = hp.value("head_dim", 0);
  s.backend = meta.value(keys::meta::kBackend, "");
  s.matmul_path = meta.value(keys::meta::kMatmulPath, "");
  s.phase = step.value(keys::step::kPhase, "");
  s.pos = step.value(keys::step::kPos, int64_t{0});
  auto mk = meta.find(keys::meta::kMatmulKernels);
  if (mk != meta.end() && mk->is_object() && mk->contains(s.phase)) s.matmul_kernels = &(*mk)[s.phase];
  return s;
}

NodeWork node_work(const json& nodes, size_t id, const StepShape& s) {
  const json& node = nodes[id];
  if (node.value("fused_into", -1) >= 0) return {0, 0, OpsKind::F32, true};
  const std::string op = str(node, "op");
  const int64_t n = dim(node, 0), d = dim(node, 1);
  const double elems = static_cast<double>(n * d);
  if (op == "input") return {0, 0, OpsKind::F32, true};
  if (op == "matmul" || op == "logits") return matmul_work(nodes, node, s);  // trace-keys: ops' names
  if (op == "attention") return attention_work(node, s);
  // the gathered rows of the table and the ids; no arithmetic beyond dequantizing
  if (op == "get_rows") return {stored_bytes(str(node, "weight_type"), n, d) + kF32 * n + kF32 * elems, 0, OpsKind::F32, true};
  // x read, the weight row read, y written; square, sum, scale by 1/rms, by the weight
  if (op == "rms_norm") return {2 * kF32 * elems + stored_bytes(str(node, "weight_type"), 1, d), 4 * elems, OpsKind::F32, true};
  // qwen3's per-head Q/K norm: as rms_norm, with one head_dim weight row shared by every head
  if (op == "head_rms_norm")
    return {2 * kF32 * elems + stored_bytes(str(node, "weight_type"), 1, s.head_dim), 4 * elems, OpsKind::F32, true};
  // x and the positions read, y written; a rotation is 2 multiplies and an add per element. Both
  // layouts (NeoX, llama's adjacent pairs); Llama 3's rope_freqs (head_dim/2 f32 divisors) read too.
  if (op == "rope" || op == "rope_normal") {
    const double divisors = str(node, "weight").empty() ? 0 : kF32 * static_cast<double>(s.head_dim / 2);
    return {2 * kF32 * elems + kF32 * n + divisors, 3 * elems, OpsKind::F32, true};
  }
  // this step's k and v rows (shape [n, 2·kv width]) read with their positions, written to the cache
  if (op == "kv_store") return {2 * kF32 * elems + kF32 * n, 0, OpsKind::F32, true};
  if (op == "add" || op == "mul") return {3 * kF32 * elems, elems, OpsKind::F32, true};
  if (op == "add_bias") return {2 * kF32 * elems + kF32 * d, elems, OpsKind::F32, true};
  // silu(x) = x / (1 + exp(-x)): exp, add, divide
  if (op == "silu") return {2 * kF32 * elems, 3 * elems, OpsKind::F32, true};
  if (op == "swiglu") return {3 * kF32 * elems, 4 * elems, OpsKind::F32, true};
  if (op == "last_row") return {2 * kF32 * static_cast<double>(d), 0, OpsKind::F32, true};
  return tensors_only(nodes, node);
}

}  // namespace minfer::trace
