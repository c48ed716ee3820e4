// CudaBackend's state, shared by the files that implement it, one concern each:
//   cuda_backend.cpp     construction, the KV cache, run_step (the step's inputs, which graph
//                        variant, lanes and host slots), reading logits and the greedy token
//   cuda_step_plan.cpp   the per-shape plan: node buffers (or the shared arena), scratch, fusion
//   cuda_dispatch.cpp    each node's (or fused group's) launches, in graph order (enqueue)
//   cuda_graphs.cpp      capture and instantiation of a decode step's CUDA graphs
//   cuda_recording.cpp   summaries forked beside the step and joined, the tail branch, the
//                        logits summary, GPU time and kernel records
//   cuda_node_rerun.cpp  the paired trace's reruns of a node on the other matmul path
// Internal to the CUDA backend.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_step_plan.h"
#include "cuda/device_buffer.h"
#include "cuda/device_weights.h"
#include "probes/cuda/kernel_profiler.h"
#include "probes/cuda/tensor_compare.h"

namespace minfer {

struct CudaBackend::Impl {
  using DeviceBuffer = cuda::DeviceBuffer;
  using DeviceOutput = cuda::DeviceOutput;
  using StepPlan = cuda::StepPlan;
  using StepSummaries = cuda::StepSummaries;

  const Model& m;
  MatmulPath path;
  CudaOptions opts;  // as the program read them (EngineOptions::cuda)
  bool graphs;  // decode steps replayed as one CUDA graph (MINFER_NO_CUDA_GRAPH=1: eager)
  bool fusion;  // fused one-row kernels (MINFER_CUDA_FUSION=0: the unfused reference path)
  bool chain;   // decode steps fed the previous step's argmax on the device (MINFER_CUDA_CHAIN=0: off)
  cudaStream_t stream = nullptr;
  // The streams steps run on: lanes[0] is `stream` (captures, eager steps, untraced steps);
  // traced decode graphs whose tail is a branch alternate between lanes[0] and lanes[1] by host
  // slot, so step N+1 starts when N's main chain ends while N's tail still runs (enter_lane).
  std::array<cudaStream_t, 2> lanes{};
  int last_lane = 0;            // the lane of the last launched step
  bool last_alternated = false;  // that step was such a graph (its ev_end is its main chain's end)
  cudaEvent_t lane_switch = nullptr;
  // Traced steps summarise their nodes on streams forked from `stream` (in the captured graph:
  // parallel branches), part by part as the step computes them (enqueue, join_summaries): one
  // for the small tensors, one for the chunked ones (the logits), so the last part's two run
  // side by side after the LM head.
  std::array<cudaStream_t, 2> side{};
  std::array<bool, 2> side_forked{};  // this step enqueued work on it (join_summaries)
  cudaEvent_t fork_ev = nullptr;
  std::array<cudaEvent_t, 2> join_ev{};
  // Recorded by the tail branch of the graph of host slot k (after its host copies); the next
  // step's graph waits for it before it rewrites what the tail reads (enqueue).
  std::array<cudaEvent_t, 2> tail_done{};
  cublasHandle_t cublas = nullptr;
  DeviceBuffer cublas_workspace;
  std::unique_ptr<cuda::DeviceWeights> weights;
  int64_t n_ctx = 0;
  std::vector<DeviceBuffer> k_cache, v_cache;  // per layer [n_ctx][n_embd_kv] f32
  std::map<std::string, std::unique_ptr<StepPlan>> plans;
  const StepPlan* last = nullptr;
  int64_t peak_plan_bytes = 0;     // the most the step plans held at once (a prefill plan is replaced)
  int64_t decode_graph_nodes = 0;  // kernels (and copies) in the captured decode step
  float* host_logits = nullptr;  // pinned
  int64_t host_logits_n = 0;
  // Recording of the next step to launch (set_recording); none when no observer records it.
  StepRecording rec;
  const Observer* rec_observer = nullptr;
  bool profiling = false;                    // CUPTI collects the last launched step
  bool cupti_on = false;                     // CUPTI's activity kinds are enabled (KernelProfiler::stop)
  // Launched steps alternate between two slots (host copies of their summaries, their events),
  // so step N stays readable while N+1 runs: `cur` is the last launched, `reading` the one
  // output(), gpu_time() and read_logits_summary() read (read_step).
  struct Slot {
    StepPlan* plan = nullptr;
    StepRecording rec;
    bool logits_summary = false;                // the step computed its logits summary
    const cuda::CaptureMap* capture = nullptr;  // the replayed graph's map, null when eager
    // Timed; ev_end is the end of the step's own work (an alternating graph records it inside,
    // before its tail ends).
    cudaEvent_t ev_begin = nullptr, ev_end = nullptr;
    double host_ms = -1;
    // The step's greedy token, copied ahead of its recording (read_greedy_token waits for
    // this copy only); per slot, since a chained step N+1 is launched before N's is read.
    bool has_token = false;
    int32_t* host_token = nullptr;  // pinned
    cudaEvent_t token_copied = nullptr;
  };
  std::array<Slot, 2> slots;
  int cur = 0, reading = 0;
  // The paired trace's metrics on the device (DeviceOutput::compare_to, outliers).
  std::unique_ptr<cuda::DeviceComparer> comparer;
  uint64_t steps_launched = 0;  // run_step calls: what DeviceOutput's cached results belong to
  // rerun_node's scratch: a MatMul of the last step run again on the other matmul path, on the
  // last step's lane after it, from the node's input as the step left it. The f16 path
  // dequantizes the node's weight into `w16` (this backend has no W16 cache on the MMQ path;
  // the same kernel builds the reference's cache, so the rerun is what the reference computes
  // from these inputs).
  struct Rerun {
    DeviceBuffer y, act_q8, act_half, w16;
    std::string w16_of;  // the weight `w16` holds ("" none)
    StepSummaries none;  // a rerun output has no device summary
    std::unique_ptr<DeviceOutput> out;
    cudaEvent_t done = nullptr;
    bool pending = false;  // enqueued since the last step: the next step waits for `done`
  } rerun;
  // Whether a MatMul/Logits node computes differently on `p` than on this backend's path: a
  // quantized weight on more than one row (mmq against dequant + cuBLAS). One-row matmuls
  // (decode, the LM head) take the same matvec on both paths, float weights the same cuBLAS GEMM.
  bool path_dependent(const Node& n, MatmulPath p) const {
    if ((n.op != Op::MatMul && n.op != Op::Logits) || n.weight.empty() || p == path || n.rows() == 1) return false;
    return is_quantized(weights->get(n.weight).type);
  }
  const NodeOutput* rerun_matmul(const Graph& g, const Node& n, MatmulPath p, StepPlan& plan);

  Impl(const Model& model, MatmulPath p, const CudaOptions& o)
      : m(model), path(p), opts(o), graphs(o.step_graphs), fusion(o.step_fusion), chain(o.chain) {}
  ~Impl() {
    // A chained step launched past the end of a generation may still run: nothing it uses is
    // freed before it ends.
    try {
      if (lanes[1]) sync_all("the steps in flight before the backend is destroyed");
    } catch (...) {  // a failed device: free what can be freed
    }
    if (cupti_on) cuda::KernelProfiler::get().stop();
    plans.clear();
    for (Slot& sl : slots) {
      if (sl.ev_begin) cudaEventDestroy(sl.ev_begin);
      if (sl.ev_end) cudaEventDestroy(sl.ev_end);
      if (sl.host_token) cudaFreeHost(sl.host_token);
      if (sl.token_copied) cudaEventDestroy(sl.token_copied);
    }
    if (host_logits) cudaFreeHost(host_logits);
    if (rerun.done) cudaEventDestroy(rerun.done);
    if (cublas) cublasDestroy(cublas);
    for (cudaEvent_t e : {fork_ev, lane_switch, join_ev[0], join_ev[1], tail_done[0], tail_done[1]})
      if (e) cudaEventDestroy(e);
    for (cudaStream_t s : side)
      if (s) cudaStreamDestroy(s);
    for (cudaStream_t s : lanes)
      if (s) cudaStreamDestroy(s);
  }

  void check_weight_types() const;
  StepPlan& plan_for(const Graph& g, bool shared = false);
  bool outputs_private(const Graph& g) const;
  // Both lanes and the side streams have finished.
  void sync_all(const char* what) {
    for (cudaStream_t s : lanes)
      if (s) cuda::sync_bounded(s, what);
    for (cudaStream_t s : side)
      if (s) cuda::sync_bounded(s, what);
  }
  // Before a step's first work on `lane`: what it must wait for of the last step when that ran
  // on the other lane (an alternating graph after another: that step's main chain; else all).
  void enter_lane(int lane, bool alternating) {
    if (lane != last_lane) {
      cudaEvent_t e = slots[static_cast<size_t>(cur ^ 1)].ev_end;
      if (!(alternating && last_alternated)) {
        CUDA_CHECK(cudaEventRecord(lane_switch, lanes[static_cast<size_t>(last_lane)]));
        e = lane_switch;
      }
      CUDA_CHECK(cudaStreamWaitEvent(lanes[static_cast<size_t>(lane)], e, 0));
    }
    last_lane = lane;
    last_alternated = alternating;
  }
  size_t enqueue(const Graph& g, StepPlan& p, cuda::CaptureRecorder* cap, unsigned variant, cudaEvent_t tail_wait);
  void enqueue_tail(const Graph& g, StepPlan& p, unsigned variant, size_t tail_first, int k);
  void prepare_summaries(const Graph& g, StepPlan& p);
  void fork_summaries(StepPlan& p, size_t first, size_t end, cuda::CaptureRecorder* cap);
  void join_summaries();
  bool prepare_logits_summary(const Graph& g, StepPlan& p);
  void enqueue_logits_summary(const Graph& g, StepPlan& p, cuda::CaptureRecorder* cap, cudaStream_t s);
  void capture(const Graph& g, StepPlan& p, unsigned variant, bool with_map);  // into p.graphs[variant]
  void run_node(const Graph& g, const Node& n, StepPlan& p);
  void run_group(const Graph& g, const cuda::FusedGroup& grp, StepPlan& p);
  bool fusable_matvec(const Node& n) const;
  bool residual_matvec(const Node& n) const;
  bool swiglu_feeds_q8_1(const Graph& g, const Node& sw) const;
  int activation_block(const Node& n) const;
  static float* out(StepPlan& p, int id) { return p.ptr[static_cast<size_t>(id)]; }
  static const float* input(const Graph& g, const Node& n, size_t i, StepPlan& p) {
    const Node& s = g.node(n.src.at(i));
    if (!s.has_output) fail("node '", n.name, "' reads '", s.name, "', which has no output buffer");
    return out(p, s.id);
  }
  void matmul(const Node& n, const float* x, float* y, const float* bias, StepPlan& p);
  // x (n's input, n.rows() rows of cols) as Q8_1 in p.act_q8, quantized unless it already holds it.
  const void* quantized_input(const Node& n, const float* x, int64_t cols, StepPlan& p);
};

}  // namespace minfer
