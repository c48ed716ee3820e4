#include "graph/graph.h"

namespace minfer {

const char* op_name(Op op) {
  switch (op) {
    case Op::Input: return "input";
    case Op::GetRows: return "get_rows";
    case Op::RmsNorm: return "rms_norm";
    case Op::HeadRmsNorm: return "head_rms_norm";
    case Op::MatMul: return "matmul";
    case Op::AddBias: return "add_bias";
    case Op::Rope: return "rope";
    case Op::RopeNormal: return "rope_normal";
    case Op::KvStore: return "kv_store";
    case Op::Attention: return "attention";
    case Op::Add: return "add";
    case Op::Silu: return "silu";
    case Op::Mul: return "mul";
    case Op::SwiGLU: return "swiglu";
    case Op::LastRow: return "last_row";
    case Op::Logits: return "logits";
  }
  return "?";
}

const char* dtype_name(DType t) { return t == DType::F32 ? "f32" : "i32"; }
const char* phase_name(Phase p) { return p == Phase::Prefill ? "prefill" : "decode"; }

int Graph::find(const std::string& name) const {
  for (const auto& n : nodes)
    if (n.name == name) return n.id;
  return -1;
}

int Graph::add(Node n) {
  n.id = static_cast<int>(nodes.size());
  nodes.push_back(std::move(n));
  return nodes.back().id;
}

}  // namespace minfer
