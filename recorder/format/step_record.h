// What the recorder keeps of one finished step until it is formatted: gathered on the run's
// thread right after the step (summaries come from where the tensors live), formatted as JSON
// on a worker (step_json.h) and, on a pipelined run, journaled in binary first (step_journal.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "exec/observer.h"
#include "format/gpu_time_json.h"
#include "probes/logits_summary.h"
#include "probes/tensor_compare.h"

namespace minfer::trace {

// Why a node record has no output (docs/trace-format.md, NodeRecord `no_output`); the recorder
// and the journal's decoder point into this list.
inline constexpr const char* kNoOutputReasons[] = {"fused", "kv_store", "input", "no_buffer"};

// Why node n, reported without an output, has none.
inline const char* no_output_reason(const Node& n) {
  if (!n.executed()) return kNoOutputReasons[0];      // fused
  if (n.op == Op::KvStore) return kNoOutputReasons[1];  // kv_store
  if (n.op == Op::Input) return kNoOutputReasons[2];    // input: token ids / positions, shown as the step's tokens
  return kNoOutputReasons[3];                           // no_buffer
}

struct NodeData {
  int id = -1;
  int64_t rows = 0, cols = 0;
  NodeTime time;
  const char* no_output = nullptr;  // one of kNoOutputReasons: a record without output
  TensorSummary summary;
  std::optional<TensorSummary> ref;                     // paired
  std::optional<TensorCompare> full, local;             // paired
  std::vector<Outlier> outliers;
  bool ref_present = false;                             // outliers carry the reference's values
  std::optional<BlockScales> act_scales;
};

// One step's logits (copies: the caller's buffers are reused by the next step).
struct LogitsData {
  std::vector<float> logits, sampled;  // sampled: the penalized logits, when known
  std::optional<LogitsSummary> summary;  // computed by the backend: `logits` stays empty
  int32_t chosen = -1;
  float temperature = 0, repeat_penalty = 1;
  bool has_sampled = false;
  bool sampled_is_raw = false;  // the draw used the logits as they are: `sampled` stays empty
};

// Everything of a finished step the writer needs.
struct StepData {
  StepInfo info;  // phase, step, pos0, tokens (the rest is not written)
  double seconds = 0;
  std::string graph_id;
  double start_ms = 0;
  bool selected = false;
  std::vector<NodeData> nodes;  // execution order
  std::optional<LogitsData> logits, ref_logits;
  StepGpuTime gpu;
  std::vector<NodeGpuTime> node_gpu;  // by node id, from gpu.kernels: once per step, for every part
};

}  // namespace minfer::trace
