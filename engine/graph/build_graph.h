// Builds the compute graph of a qwen2, qwen3 or llama model for one phase from its
// hyper-parameters and architecture traits (unfused); fuse() then folds bias adds into matmuls
// and silu*mul into swiglu.
#pragma once
#include "graph/graph.h"
#include "model/model.h"

namespace minfer {

Graph build_graph(const Model& m, Phase phase, int n_tokens);
// Folds AddBias into the preceding MatMul and Silu+Mul into SwiGLU. The folded nodes stay in
// the graph with fused_into set (visible in --dump-graph and traces), consumers are rewired.
void fuse(Graph& g);
// Prefill graph (n_tokens rows) or decode graph (1 row), fused unless `fused` is false (a
// program passes EngineOptions::graph_fusion: MINFER_NO_FUSION=1 turns it off).
Graph make_graph(const Model& m, Phase phase, int n_tokens, bool fused = true);

}  // namespace minfer
