// The CUDA backend: weights uploaded once in their GGUF types, f32 activations, an f32 KV
// cache, one device buffer per node output (addressable after the step for the recorder), except
// in a prefill nobody records: its outputs share one arena by lifetime (exec/buffer_plan.h).
// A decode step is captured once into a CUDA graph and replayed for every token; the token id
// and position are copied into device memory before each replay and every kernel reads them
// there. CudaOptions::step_graphs = false (MINFER_NO_CUDA_GRAPH=1) runs the same kernels eagerly. Prefill: int8 MMQ (default) or,
// with MINFER_MMQ=0, weights dequantized once to f16 (the "W16 cache") and cuBLAS tensor cores.
// Paired traces (--compare-path): node reruns on the other path and the metrics against the
// reference are computed on the device (rerun_node, cuda_node_rerun.cpp; DeviceOutput, cuda_device_output.h).
// The implementation is split by concern: cuda_backend_impl.h lists the files.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "exec/backend.h"
#include "model/model.h"

namespace minfer {

class CudaBackend final : public Backend, public BackendProbes {
 public:
  // Uploads the weights; every weight type is checked against the kernels that will read it
  // (an unsupported one is an Error naming the tensor, never a CPU fallback). options: the
  // program's EngineOptions::cuda (CUDA graphs, fusion, chaining, kernel choices, CUPTI); its
  // process-wide switches (PDL, launch sync, wait bound) are set for every launcher
  // (cuda/launch_settings.h). path: the prefill's; unset, MMQ unless the device is sm_90 and
  // matmul_dequant takes every quantized prefill weight (then the f16 path, which is faster there
  // at the same memory: docs/benchmarks.md, issue 29, session 26).
  CudaBackend(const Model& m, std::optional<MatmulPath> path, const CudaOptions& options = {});
  ~CudaBackend() override;
  std::string name() const override { return "cuda"; }
  std::string device() const override;
  MatmulPath matmul_path() const override;
  bool step_graphs() const override;
  void reserve_context(int64_t n_ctx) override;
  void run_step(const Graph& g, const StepInfo& s) override;
  const NodeOutput* output(const Node& n) const override;
  void read_logits(const Graph& g, std::vector<float>& out) override;
  bool greedy_on_device() const override { return true; }
  int32_t read_greedy_token(const Graph& g, bool previous) override;
  bool chains_greedy_token() const override;
  std::string matmul_kernel(const Node& n) const override;
  void read_step(bool previous) override;
  MemoryReport memory() const override;
  // The probes (summaries in the step's CUDA graph, CUPTI, reruns): cuda_recording.cpp,
  // cuda_node_rerun.cpp.
  using Backend::probes;
  BackendProbes& probes() override { return *this; }
  void set_recording(const StepRecording& r, const Observer* o) override;
  StepGpuTime gpu_time() override;
  bool keeps_step_results(const StepRecording& r) const override;
  std::optional<LogitsSummary> read_logits_summary(const Graph& g) override;
  std::string kernel_records_unavailable() const override;
  const char* summaries_computed_on() const override { return "device"; }
  int activation_block(const Node& n) const override;
  // The paired trace's local error on the device: a quantized matmul of more than one row rerun
  // on the other path (mmq, or the weight dequantized to f16 + cuBLAS) from the last step's own
  // input into scratch; every other node is its own rerun (the same kernels on both paths).
  const NodeOutput* rerun_node(const Graph& g, const Node& n, MatmulPath path) override;
  bool reruns_nodes() const override { return true; }
  int64_t decode_kernels() const override;
  // The device memory's streaming read bandwidth (cuda/device_bandwidth.h), GB/s.
  double read_bandwidth_gbs();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer
