// What an executor needs from a backend. The unit of work is a STEP (a whole graph over the
// step's tokens), not a node: the CUDA backend replays a decode step as one CUDA graph, with
// no host round trip between nodes. After the step every node's output stays addressable
// (output()) until the next step, so observers see all of them.
// Backends are chosen at start (cpu | cuda) and never fall back silently mid-run. This is the
// compute; what a backend computes for the recorder (summaries, reruns, kernel records) is its
// BackendProbes (exec/backend_probes.h), and its memory bandwidth probe is the backend's own
// (CpuBackend / CudaBackend::read_bandwidth_gbs), asked by the programs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine_options.h"
#include "exec/backend_probes.h"
#include "exec/observer.h"
#include "graph/graph.h"

namespace minfer {

// MatmulPath (the prefill's matmul path, EngineOptions::prefill) is core/engine_options.h's.
// The path's name as traces and tools print it: "mmq", or the float path named for what it
// computes on that backend: "f32" on cpu (f32 GEMM), "f16" on cuda (f16 tensor-core GEMM).
const char* matmul_path_name(MatmulPath p, const std::string& backend);
// "mmq", "f32" or "f16" (both float names select the float path of any backend); an Error
// naming `what` (a flag or variable) otherwise.
MatmulPath parse_matmul_path(const std::string& name, const std::string& what);

// Device memory a backend holds, by purpose (weights, w16_cache, kv_cache, activations, ...).
using MemoryReport = std::vector<std::pair<std::string, int64_t>>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;    // "cpu", "cuda"
  virtual std::string device() const = 0;  // CPU model / GPU name
  virtual MatmulPath matmul_path() const = 0;
  std::string matmul_path_label() const { return matmul_path_name(matmul_path(), name()); }
  // Whether decode steps are replayed as one captured graph (cuda, unless MINFER_NO_CUDA_GRAPH=1).
  virtual bool step_graphs() const { return false; }
  // Reserves the KV cache for positions [0, n_ctx).
  virtual void reserve_context(int64_t n_ctx) = 0;
  // Runs every executed node of g on the step's tokens at positions s.pos0.. . May return before
  // the device is done: output() and read_logits() wait for it.
  virtual void run_step(const Graph& g, const StepInfo& s) = 0;
  // The node's output after the step (valid until the next run_step); null if it has none.
  virtual const NodeOutput* output(const Node& n) const = 0;
  // The node's host-clock timing in the last step; seconds < 0 when the backend does not time
  // nodes one by one (a step replayed as one CUDA graph: GPU time comes from kernel records).
  virtual NodeTime node_time(const Node& n) const { (void)n; return {}; }
  // Which launched step output() and the probes' gpu_time() and read_logits_summary() refer to: the last one
  // (run_step selects it), or after run_step(N+1) step N again (previous; only when
  // keeps_step_results() held for step N's recording).
  virtual void read_step(bool previous) { (void)previous; }
  // Whether read_greedy_token() is available: the argmax of the logits computed in the step.
  virtual bool greedy_on_device() const { return false; }
  // The argmax of the final node's (logits) last row, lowest id on ties as Sampler::pick, of the
  // last launched step, or (previous) of the one launched before it; only when
  // greedy_on_device(). Greedy decoding then never copies the logits row to the host.
  virtual int32_t read_greedy_token(const Graph& g, bool previous) { (void)g; (void)previous; return -1; }
  // Whether run_step takes a one-token step whose token is the last launched step's greedy pick
  // (StepInfo::token_on_device), read from the device: the host launches step N+1 before it has
  // read N's token, so the device does not wait for the host between decode steps.
  virtual bool chains_greedy_token() const { return false; }
  // Copies the final node's (logits) last row to host.
  virtual void read_logits(const Graph& g, std::vector<float>& out) = 0;
  // Which kernel computes a MatMul/Logits node ("mmq", "mmvq", "f16 gemm", ...): the trace
  // records it per node, since decode and prefill, quantized and float weights differ.
  virtual std::string matmul_kernel(const Node& n) const = 0;
  virtual MemoryReport memory() const { return {}; }
  // Kernels in one decode step (the captured graph's nodes); 0 when not known (cpu, eager).
  virtual int64_t decode_kernels() const { return 0; }
  // What the backend computes for the recorder beside the step (exec/backend_probes.h): a
  // backend without probes answers with BackendProbes' defaults (host summaries, no reruns, no
  // kernel records).
  virtual BackendProbes& probes();
  const BackendProbes& probes() const { return const_cast<Backend*>(this)->probes(); }
};

}  // namespace minfer
