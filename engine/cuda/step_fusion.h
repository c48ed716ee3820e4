// Fusion of one-row steps (decode, and the last-row tail of a prefill) on the GPU: groups of
// graph nodes that one fused kernel computes, found from the graph's structure. Every node of
// a group still gets its output written to its own buffer (the fused kernels write the
// intermediates too), so the recorder sees every node exactly as without fusion.
//   NormMatvecs      RmsNorm + its 1-3 consumer matvecs (q/k/v, or the LM head): mmvq_fused
//   NormGateUpSwiglu RmsNorm + gate + up matvecs + SwiGLU:                       mmvq_swiglu_fused
//   MatvecResidual   matvec + the residual Add that consumes it:                 mmvq_fused, or
//                    quantize_q8_1 + mmvq_residual when the input is too wide for the fused
//                    prologue (Qwen2.5-7B's FFN down, 18944)
//   RopeKv           q rope + k rope + KV store of one layer:                     rope_kv_store
//   NormRopeKv       q norm + k norm (qwen3's per-head QK-norm) + RopeKv:           rope_kv_store
// The rope groups take either layout (Rope: NeoX, RopeNormal: Llama) and a frequency-divisor
// weight (rope_freqs) when q and k rope carry the same one. Nothing here assumes biases (the
// matvecs' are optional epilogues) or n_head * head_dim == n_embd (each matvec has its own width).
// CudaOptions::step_fusion = false (MINFER_CUDA_FUSION=0) turns it off: the unfused kernels are
// the reference path.
#pragma once
#include <functional>
#include <vector>

#include "graph/graph.h"

namespace minfer::cuda {

enum class FusedKind { NormMatvecs, NormGateUpSwiglu, MatvecResidual, RopeKv, NormRopeKv };

struct FusedGroup {
  FusedKind kind;
  std::vector<int> nodes;  // member node ids; the group launches when the last of them is reached
  int last = -1;           // the member latest in execution order
};

struct StepFusion {
  std::vector<FusedGroup> groups;
  std::vector<int> group_of;  // per node id: index into groups, or -1 (runs on its own)
};

// quantized_matvec(n): n is a MatMul/Logits node over one row whose weight the fused matvec
// kernels support. residual_matvec(n): n's launch can add a residual in its epilogue (a superset:
// by default the same predicate).
StepFusion plan_step_fusion(const Graph& g, const std::function<bool(const Node&)>& quantized_matvec,
                            const std::function<bool(const Node&)>& residual_matvec = nullptr);

}  // namespace minfer::cuda
