// What one graph shape needs on the device (StepPlan): its node outputs, inputs, scratch, fusion
// groups and captured CUDA graphs. Built by CudaBackend::Impl::plan_for (cuda_step_plan.cpp).
// Internal to the CUDA backend (cuda_backend*.cpp).
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_device_output.h"
#include "cuda/device_buffer.h"
#include "cuda/step_fusion.h"
#include "graph/graph.h"
#include "probes/cuda/kernel_profiler.h"
#include "probes/cuda/logits_summary.h"

namespace minfer::cuda {

// Everything one graph shape needs on the device: a buffer per node output, the step's inputs,
// scratch for the matmuls and attention, and (decode) the captured CUDA graph.
// A shared-arena plan (an untraced prefill: nobody reads its node outputs after the step) puts
// every node output but the last node's (the logits) into one arena at offsets from
// plan_buffers (exec/buffer_plan.h): outputs whose lifetimes do not overlap share bytes. Only the
// last node keeps a buffer and a DeviceOutput of its own; output() is null for the others.
struct StepPlan {
  std::vector<DeviceBuffer> out;                       // per node id: its own buffer (empty: none)
  std::vector<float*> ptr;                             // per node id: its output (own buffer or arena)
  DeviceBuffer arena;                                  // shared-arena plans: the reused node outputs
  std::vector<std::unique_ptr<DeviceOutput>> outputs;  // per node id (null: not readable after the step)
  DeviceBuffer tokens, positions;                      // int32 [n_tokens], device
  int32_t* host_inputs = nullptr;                      // pinned staging: tokens then positions
  DeviceBuffer act_q8;                                 // Q8_1 activations of the widest matmul input
  // Which input act_q8 (act_half) holds in the step being enqueued: matmuls of one input (q/k/v,
  // gate/up on the unfused paths) quantize it (convert it to f16 for matmul_dequant) once. Reset
  // at the start of every enqueue.
  struct HeldInput {
    int node = -1;
    const float* x = nullptr;
    int64_t rows = 0, cols = 0;
    bool operator==(const HeldInput&) const = default;
  } act_q8_holds, act_half_holds;
  DeviceBuffer act_half;                               // f16/bf16 activations (float GEMM path)
  DeviceBuffer attn_scratch;                           // split-KV partials (decode)
  DeviceBuffer attn_tickets;                           // their per-head merge counters (zeroed once)
  DeviceBuffer swiglu_q8_tickets;                      // SwiGLU -> Q8_1 block counters (zeroed once)
  DeviceBuffer argmax;                                 // int32: the logits' argmax (greedy decoding)
  DeviceBuffer argmax_scratch;                         // its partials (zeroed once, see argmax.h)
  // Recorded after a step's input copies (the staging buffer may then be rewritten).
  cudaEvent_t inputs_copied = nullptr;
  cuda::StepFusion fusion;                             // node groups run by one fused kernel
  StepSummaries summaries;                             // traced steps: node summaries on the device
  std::vector<int> act_block;                          // per node id: Impl::activation_block
  // Decode: the step as captured, per recording variant (bit 0: node summaries, bit 1: logits
  // summary, bit 2: the summaries' tail joined into the step's end), with which node launched
  // each captured kernel. A traced step whose kernels CUPTI does not record has its tail as a
  // branch (`kTailJoined` unset): the summaries of the nodes written after the last in-step
  // fork, the logits summary and the host copies run beside the step's end, and the next step
  // waits for the step's main chain only (Impl::enqueue_tail). A graph launch is ordered behind
  // the previous launch of the same executable graph, so such a variant is instantiated once
  // per host slot and consecutive steps alternate between the two, each on its own stream
  // (Impl::lanes); `exec[0]` alone for the others.
  struct Captured {
    std::array<cudaGraphExec_t, 2> exec{};
    cuda::CaptureMap map;
  };
  static constexpr unsigned kTailJoined = 4;
  static bool alternates(unsigned variant) { return (variant & 3) && !(variant & kTailJoined); }
  std::array<Captured, 8> graphs;
  std::unique_ptr<cuda::DeviceLogitsSummary> logits_summary;  // recorded steps: top-k, entropy
  size_t bytes = 0;

  void drop_graph(unsigned v) {
    for (cudaGraphExec_t e : graphs[v].exec)
      if (e) cudaGraphExecDestroy(e);
    graphs[v] = Captured{};
  }
  void drop_graphs(unsigned with_bit) {  // the variants that include `with_bit` (0: all)
    for (unsigned v = 0; v < graphs.size(); ++v)
      if (with_bit == 0 || (v & with_bit)) drop_graph(v);
  }
  ~StepPlan() {
    drop_graphs(0);
    if (inputs_copied) cudaEventDestroy(inputs_copied);
    if (host_inputs) cudaFreeHost(host_inputs);
  }
};

}  // namespace minfer::cuda
