// The compute graph: nodes in execution order, each producing one token-major tensor.
// Built per phase (prefill over the prompt, decode one token) from the model's hyper-parameters.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/weight_type.h"

namespace minfer {

enum class Op {
  Input,      // token ids or positions fed by the executor (I32)
  GetRows,    // embedding lookup: rows of a weight by token id
  RmsNorm,    // x / rms(x) * weight
  HeadRmsNorm,  // RmsNorm over each head's head_dim values (qwen3's Q/K norm; weight {head_dim})
  MatMul,     // x @ W^T (+ bias when the bias epilogue is fused)
  AddBias,    // x + bias (removed by fusion into MatMul)
  Rope,       // NeoX rotary embedding on q or k (weight, when set: rope_freqs divisors)
  RopeNormal, // ggml "normal" rotary embedding, adjacent pairs (llama; weight as Rope)
  KvStore,    // writes k and v rows into the layer's cache (no output tensor)
  Attention,  // causal GQA attention of q over the layer's cache
  Add,        // elementwise residual add
  Silu,       // silu(x) (removed by fusion into SwiGLU)
  Mul,        // elementwise product (removed by fusion into SwiGLU)
  SwiGLU,     // silu(gate) * up
  LastRow,    // keeps the last token's row (only it needs logits)
  Logits,     // final projection to the vocabulary (a MatMul by output.weight / token_embd)
};
const char* op_name(Op op);

enum class DType { F32, I32 };
const char* dtype_name(DType t);

struct Node {
  int id = -1;
  std::string name;            // e.g. "blk.3.attn_q"
  Op op = Op::Input;
  std::vector<int64_t> shape;  // {rows (tokens), cols (features)} token-major
  DType dtype = DType::F32;
  std::vector<int> src;        // producer node ids, in argument order
  int layer = -1;              // transformer layer, -1 outside the blocks
  std::string weight;          // weight tensor name ("" when none)
  std::optional<WeightType> weight_type;
  std::string bias;            // bias tensor name when fused/used
  std::vector<std::string> fused_from;  // names of the nodes folded into this one
  int fused_into = -1;         // >= 0: this node was folded into that node and is not executed
  bool has_output = true;      // false: no tensor to observe (KvStore, fused-away nodes)

  bool executed() const { return fused_into < 0; }
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
};

enum class Phase { Prefill, Decode };
const char* phase_name(Phase p);

struct Graph {
  Phase phase = Phase::Prefill;
  int n_tokens = 0;   // rows fed in
  int pos0 = 0;       // position of the first row
  std::vector<Node> nodes;  // execution order; ids equal indices
  bool fused = false;       // the fusion pass ran

  const Node& node(int id) const { return nodes.at(static_cast<size_t>(id)); }
  int find(const std::string& name) const;  // -1 when absent
  int add(Node n);                          // assigns the id, returns it
};

}  // namespace minfer
