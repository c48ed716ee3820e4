// What an executor needs from a backend. The unit of work is a STEP (a whole graph over the
// step's tokens), not a node: the CUDA backend replays a decode step as one CUDA graph, with
// no host round trip between nodes. After the step every node's output stays addressable
// (output()) until the next step, so observers see all of them.
// Backends are chosen at start (cpu | cuda) and never fall back silently mid-run.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/observer.h"
#include "graph/graph.h"

namespace minfer {

enum class MatmulPath { MMQ, Float };  // MINFER_MMQ=0 selects Float for prefill
const char* matmul_path_name(MatmulPath p);  // "mmq" / "f16"
MatmulPath matmul_path_from_env();

// Device memory a backend holds, by purpose (weights, w16_cache, kv_cache, activations, ...).
using MemoryReport = std::vector<std::pair<std::string, int64_t>>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;    // "cpu", "cuda"
  virtual std::string device() const = 0;  // CPU model / GPU name
  virtual MatmulPath matmul_path() const = 0;
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
  // Copies the final node's (logits) last row to host.
  virtual void read_logits(const Graph& g, std::vector<float>& out) = 0;
  // Which kernel computes a MatMul/Logits node ("mmq", "mmvq", "f16 gemm", ...): the trace
  // records it per node, since decode and prefill, quantized and float weights differ.
  virtual std::string matmul_kernel(const Node& n) const = 0;
  virtual MemoryReport memory() const { return {}; }
  // Kernels in one decode step (the captured graph's nodes); 0 when not known (cpu, eager).
  virtual int64_t decode_kernels() const { return 0; }
  // Measured streaming read bandwidth of the memory the weights live in (GB/s): the decode floor.
  virtual double read_bandwidth_gbs() = 0;
};

}  // namespace minfer
