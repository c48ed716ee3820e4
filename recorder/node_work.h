// The work a graph node must do in one step, from the trace's graph alone (docs/trace-format.md,
// "Roofline"): the bytes it must move through DRAM (weights read once, f32 activations read and
// written once, the KV cache read once) and the operations it must do (2 per multiply-add).
// One rule for every reader: `minfer-trace summary` uses it, web/src/model/node-work.ts is its
// twin for the page; both are checked against the same hand counts.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace minfer::trace {

// Which compute ceiling a node's operations run against.
enum class OpsKind { Int8, F16, F32 };
const char* ops_kind_name(OpsKind k);  // "int8", "f16", "f32"

struct NodeWork {
  double bytes = 0, ops = 0;
  OpsKind kind = OpsKind::F32;
  bool known = true;  // false: an op this rule does not know (bytes = its tensors, ops = 0)
};

// What the node's work depends on besides the graph.
struct StepShape {
  int64_t pos = 0;         // position of the step's first token: the KV cache holds pos + n rows after it
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  std::string backend;     // "cuda" | "cpu"
  std::string matmul_path; // "mmq" | "f16" | "f32"
  std::string phase;       // "prefill" | "decode"
  // meta.matmul_kernels[phase] (node name -> kernel), or null: which kernel a matmul ran with
  const nlohmann::json* matmul_kernels = nullptr;
};

// Reads meta.model.hparams, meta.backend, meta.matmul_path, meta.matmul_kernels and the step's
// pos and phase. `meta` must outlive the result (it points into meta.matmul_kernels).
StepShape step_shape(const nlohmann::json& meta, const nlohmann::json& step);

// Node `id` of `graph_nodes` (a trace Graph's "nodes"). A node folded into another
// (fused_into >= 0) does no work of its own: its owner counts it (a MatMul with a bias adds it,
// SwiGLU is silu(gate)·up).
NodeWork node_work(const nlohmann::json& graph_nodes, size_t id, const StepShape& s);

}  // namespace minfer::trace
