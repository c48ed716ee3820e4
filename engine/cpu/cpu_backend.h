// The CPU backend: multi-threaded kernels over mmapped weights, f32 activations, f32 KV cache.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "core/thread_pool.h"
#include "exec/backend.h"
#include "model/model.h"

namespace minfer {

class CpuBackend final : public Backend, public BackendProbes {
 public:
  CpuBackend(const Model& m, MatmulPath path, ThreadPool& pool = ThreadPool::global());
  ~CpuBackend() override;
  std::string name() const override { return "cpu"; }
  std::string device() const override;
  MatmulPath matmul_path() const override { return path_; }
  void reserve_context(int64_t n_ctx) override;
  // The CPU keeps its node loop behind the step, timing each node.
  void run_step(const Graph& g, const StepInfo& s) override;
  const NodeOutput* output(const Node& n) const override;
  NodeTime node_time(const Node& n) const override;
  void read_logits(const Graph& g, std::vector<float>& out) override;
  // The host memory's streaming read bandwidth (core/membw.h), GB/s.
  double read_bandwidth_gbs();
  std::string matmul_kernel(const Node& n) const override;
  using Backend::probes;
  BackendProbes& probes() override { return *this; }
  // Any node can be rerun: every node output keeps its own buffer until the next step.
  const NodeOutput* rerun_node(const Graph& g, const Node& n, MatmulPath path) override;
  bool reruns_nodes() const override { return true; }
  int activation_block(const Node& n) const override;

 private:
  class HostOutput;
  void begin(const Graph& g, const std::vector<int32_t>& tokens, int pos0);
  // Runs n's op into y (its own buffer, or scratch for a rerun) with the given matmul path.
  void run(const Graph& g, const Node& n, float* y, MatmulPath path);
  const float* in(const Graph& g, const Node& n, size_t i) const;
  const float* f32_weight(const std::string& name);
  void matmul(const Node& n, const float* x, float* y, const float* bias, MatmulPath path);
  // Whether n's kernel quantizes its activation (MMQ prefill, and the decode GEMV on any path).
  bool quantizes_activation(const Node& n, MatmulPath path) const;

  const Model& m_;
  MatmulPath path_;
  ThreadPool& pool_;
  std::vector<std::vector<float>> buf_;              // per node id
  std::vector<std::unique_ptr<HostOutput>> outputs_;  // per node id
  std::vector<NodeTime> times_;                       // per node id, last step
  std::vector<float> rerun_buf_;                      // rerun_node's output
  std::unique_ptr<HostOutput> rerun_out_;
  std::vector<int32_t> tokens_, positions_;
  std::map<std::string, std::vector<float>> small_f32_;  // norms and biases as f32
  int64_t n_ctx_ = 0;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer [n_ctx][n_embd_kv]
};

}  // namespace minfer
