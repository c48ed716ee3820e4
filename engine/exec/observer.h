// The one hook through which every node output is seen (the recorder implements it).
// A NodeOutput summarizes itself where the tensor lives (host memory for cpu, device memory
// for cuda), so an observer never has to copy whole activations across.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace minfer {

struct SummarySpec {
  bool stats = true;
  int grid_rows = 32;    // cap on token rows kept in the value grid (0: no grid)
  int grid_cols = 64;    // columns, evenly strided along the feature dimension
  int hist_bins = 32;    // 0: no histogram
};

struct TensorStats {
  double min = 0, max = 0, mean = 0, absmean = 0, std = 0;  // over finite values
  int64_t count = 0, nan = 0, inf = 0;
};

struct ValueGrid {
  int rows = 0, cols = 0;        // grid size
  int64_t row_stride = 1, col_stride = 1;  // rows/cols of the tensor between grid cells
  std::vector<float> values;     // rows*cols, row-major; row r = tensor row r*row_stride
};

struct Histogram {
  double lo = 0, hi = 0;         // bins span [lo, hi] = the tensor's finite range
  std::vector<int64_t> counts;
  int64_t underflow = 0, overflow = 0;  // -inf / +inf (finite values always land in a bin)
};

struct TensorSummary {
  TensorStats stats;
  ValueGrid grid;
  Histogram hist;
};

// A node's output as the backend holds it.
class NodeOutput {
 public:
  virtual ~NodeOutput() = default;
  virtual TensorSummary summarize(const SummarySpec& spec) const = 0;
  // Host copy of the whole tensor (rows*cols floats); may be slow for device tensors.
  virtual std::vector<float> to_host() const = 0;
};

// When a node ran, on the host clock, relative to its step's start. seconds < 0: not measured
// per node (see Backend::node_time).
struct NodeTime {
  double start_s = 0;
  double seconds = -1;
  bool measured() const { return seconds >= 0; }
};

struct StepInfo {
  Phase phase = Phase::Prefill;
  int step = 0;                      // 0 = prefill, 1.. = decode steps
  int pos0 = 0;
  std::vector<int32_t> tokens;       // input ids of this step
};

class Observer {
 public:
  virtual ~Observer() = default;
  // Called once per graph shape the run uses, before its first step.
  virtual void on_graph(const Graph& g) { (void)g; }
  virtual void on_step_begin(const Graph& g, const StepInfo& s) { (void)g; (void)s; }
  // Whether on_node wants this node (lets the executor skip the call cheaply).
  virtual bool wants(const Node& n) const { (void)n; return true; }
  // After the step ran, once per node in graph order. out is null for nodes without an output
  // (KvStore, fused-away).
  virtual void on_node(const Node& n, const NodeOutput* out, const NodeTime& t) = 0;
  // Logits of the step's last row (host memory) and the token the sampler chose from them.
  virtual void on_logits(const StepInfo& s, const float* logits, int64_t n_vocab, int32_t chosen) {
    (void)s; (void)logits; (void)n_vocab; (void)chosen;
  }
  virtual void on_step_end(const StepInfo& s, double seconds) { (void)s; (void)seconds; }
};

}  // namespace minfer
