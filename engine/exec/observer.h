// The one hook through which every node output is seen (the recorder implements it).
// A NodeOutput summarizes itself where the tensor lives (host memory for cpu, device memory
// for cuda), so an observer never has to copy whole activations across.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "probes/logits_summary.h"
#include "probes/tensor_compare.h"

namespace minfer {

struct SummarySpec {
  bool stats = true;
  int grid_rows = 32;    // cap on token rows kept in the value grid (0: no grid)
  int grid_cols = 64;    // columns, evenly strided along the feature dimension
  int hist_bins = 32;    // 0: no histogram
  bool operator==(const SummarySpec&) const = default;
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
  // Paired traces (probes/tensor_compare.h): this tensor against a reference of the same size,
  // its largest |x| (with the reference's values there when ref is given), and the 8-bit block
  // scales of this tensor as a matmul's activation (cols: the row width). The defaults copy to
  // host and run the host loops; a device backend overrides them to compute in place.
  virtual TensorCompare compare_to(const NodeOutput& ref, const CompareTolerance& tol) const;
  virtual std::vector<Outlier> outliers(int k, const NodeOutput* ref) const;
  virtual BlockScales block_scales(int64_t cols, int block) const;
};

// When a node ran, on the host clock, relative to its step's start. seconds < 0: not measured
// per node (see Backend::node_time).
struct NodeTime {
  double start_s = 0;
  double seconds = -1;
  bool measured() const { return seconds >= 0; }
};

// What an observer will read after a step, asked before it so a backend can prepare the work on
// the device (summaries computed inside the step's CUDA graph, per-kernel timings).
struct StepRecording {
  bool nodes = true;       // the observer reads the nodes Observer::wants selects on this step
  bool summaries = false;  // their summaries with `spec` (a device backend computes them in the step)
  SummarySpec spec;
  bool kernels = false;    // per-kernel GPU records (CUPTI) on this step
  int outliers = 0;        // largest-|x| elements per node (NodeOutput::outliers) it will ask for
  int logits_top_k = 0;    // > 0: the logits summary (probes/logits_summary.h) with this many top
                           // entries; a backend that computes it in the step hands it over in
                           // StepLogits::summary instead of the logits row
  bool step_by_step = false;  // the step is safe with the observer (flush) before the next is
                              // launched: no overlap, so a kill loses at most the step in flight
  bool operator==(const StepRecording&) const = default;
};

// One GPU kernel execution, attributed to the graph node that launched it.
struct KernelRecord {
  std::string name;                  // demangled kernel name
  int node = -1;                     // node id of the step's graph, -1 when unattributed
  std::string unattributed;          // why node is -1
  std::vector<int> covers;           // a fused kernel: every node it computes (node is the last)
  int64_t graph_node = -1;           // CUDA graph node id (CUPTI's) for graph replays, else -1
  int64_t start_ns = 0;              // relative to the step start
  int64_t duration_ns = 0;
  std::array<int, 3> grid{1, 1, 1};
  std::array<int, 3> block{1, 1, 1};
  int registers = 0;                 // per thread
  int64_t shared_bytes = 0;          // static + dynamic shared memory per block
};

// Where a step's GPU time went. Times < 0: not measured.
struct StepGpuTime {
  std::vector<KernelRecord> kernels;  // empty when kernels were not recorded on this step
  double gpu_ms = -1;       // first kernel start to last kernel end (kernels), else event pair
  double busy_ms = -1;      // union of the kernels' intervals (kernels only)
  double event_ms = -1;     // GPU time between events recorded around the step (every traced step)
  double host_ms = -1;      // host time spent enqueueing the step
  int64_t dropped = 0;      // kernel records CUPTI lost on this step
  std::string note;         // why there are no kernel records ("" when there are)
};

// What the executor shows the observer of one node after a step. `out` and `time` are always
// set; the rest only where it applies.
struct NodeView {
  const NodeOutput* out = nullptr;  // null for nodes without an output (KvStore, fused-away)
  NodeTime time;
  // MatMul/Logits whose kernel quantizes its activation to 8 bits: that input (the source
  // node's output) and the block size (BackendProbes::activation_block).
  const NodeOutput* activation = nullptr;
  int activation_block = 0;
  // Paired runs: the reference run's output of the same node, and this node's op rerun with
  // the reference path on THIS run's inputs (BackendProbes::rerun_node; null when not available).
  const NodeOutput* ref = nullptr;
  const NodeOutput* local_ref = nullptr;
};

// What the sampler drew from: the logits after the repetition penalty, and its settings. The
// probabilities are softmax(logits / temperature), or at temperature 1 when it is 0 (greedy).
struct SampledLogits {
  const float* logits = nullptr;  // n_vocab values; null when not known
  float temperature = 0;
  float repeat_penalty = 1;
};

// A step's logits (the last row, host memory) and the token chosen from them.
struct StepLogits {
  const float* logits = nullptr;  // null when `summary` stands for them
  // The logits' summary computed by the backend (StepRecording::logits_top_k), for greedy
  // decoding without a repetition penalty: the draw was from the logits as they are.
  const LogitsSummary* summary = nullptr;
  int64_t n_vocab = 0;
  int32_t chosen = -1;  // this run's sampler's pick (a teacher-forced run may feed another)
  SampledLogits sampled;
  // Paired runs: the reference run's logits of the same step and the token its sampler (same
  // settings, same random draws, same history) would have picked.
  const float* ref_logits = nullptr;
  int32_t ref_chosen = -1;
  SampledLogits ref_sampled;
};

struct StepInfo {
  Phase phase = Phase::Prefill;
  int step = 0;                      // 0 = prefill, 1.. = decode steps
  int pos0 = 0;
  std::vector<int32_t> tokens;       // input ids of this step
  // A chained decode step (Backend::chains_greedy_token): its token is the previous step's greedy
  // pick, taken on the device; tokens[0] is filled in once the host has read it.
  bool token_on_device = false;
  // When the step was launched; unset: at on_step_begin. A pipelined run delivers a step to its
  // observer while the next one runs, so on_step_begin comes after the launch.
  std::chrono::steady_clock::time_point launched{};
};

class Observer {
 public:
  virtual ~Observer() = default;
  // Called once per graph shape the run uses, before its first step.
  virtual void on_graph(const Graph& g) { (void)g; }
  virtual void on_step_begin(const Graph& g, const StepInfo& s) { (void)g; (void)s; }
  // What this observer reads of the step, from the step alone (a pipelined run asks before
  // on_step_begin). The default: every node, summaries computed wherever the backend likes, no
  // kernel records.
  virtual StepRecording recording(const StepInfo& s) const { (void)s; return {}; }
  // Whether on_node_view wants this node when the step's nodes are read (lets the executor skip
  // the call cheaply); the same answer for every step.
  virtual bool wants(const Node& n) const { (void)n; return true; }
  // After the step ran, once per node in graph order that wants(): its output (v.out, null for
  // nodes without one: KvStore, fused-away), its host timing and, for a matmul or a paired run,
  // the extras of NodeView.
  virtual void on_node_view(const Node& n, const NodeView& v) = 0;
  // After the step's nodes: the logits of its last row (host memory, or the backend's summary)
  // with what the sampler drew from and chose and, in paired runs, the reference's.
  virtual void on_step_logits(const StepInfo& s, const StepLogits& l) { (void)s; (void)l; }
  // After the nodes, when recording() asked for device work: the step's GPU time and kernels.
  virtual void on_gpu_time(const StepInfo& s, const StepGpuTime& t) { (void)s; (void)t; }
  virtual void on_step_end(const StepInfo& s, double seconds) { (void)s; (void)seconds; }
  // Returns once what every ended step left with the observer is safe (a recorder: written to
  // its file). The generation loop calls it, or sees caught_up(), before it shows a token, so a
  // run killed at any moment has recorded every step whose token was shown.
  virtual void flush() {}
  // Whether flush() would return at once; never waits.
  virtual bool caught_up() { return true; }
};

}  // namespace minfer
