// Comparison of two traces of the same model and prompt (e.g. the MMQ and the float matmul
// path): aligned by step and node, with per-node errors over the value grids, the first node
// that diverges, token agreement, top-k KL and time deltas. A paired trace (meta.compare) is
// compared with itself instead: A against its reference, from the full-tensor metrics it holds.
// The output format is docs/trace-format.md "Comparison output"; minfer-trace diff and
// minfer-viz /api/compare both serve it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "cancel.h"
#include "probes/tensor_compare.h"

namespace minfer::trace {

struct DiffOptions {
  // Which per-node value decides divergence: "sqnr_db" or "cosine" (diverged when below the
  // threshold), "max_abs_diff" or "rel_err" (the largest statistic's relative error; diverged
  // when above it).
  std::string metric = "sqnr_db";
  double threshold = 30;
  std::string label_a = "A", label_b = "B";  // names in the output and errors (file names)
  // Set from another thread: the diff stops with Cancelled (cancel.h). Null: never (the CLI).
  const CancelFlag* cancel = nullptr;
};

// SQNR over grids is capped to [-200, 200] dB (minfer::kSqnrCapDb): 200 means identical at the
// recorded precision, -200 a non-finite value on one side only.

// Two traces ("metrics_source": "grid"). Throws Error when the traces are of different models
// (sha256), different graphs (node names or ops differ), different prompts, or an unknown metric;
// Cancelled once opts.cancel is set.
nlohmann::json diff(const nlohmann::json& a, const nlohmann::json& b, const DiffOptions& opts = {});

// A paired trace, A against its reference B ("metrics_source": "full"): the same output with the
// full-tensor metrics of each node's `cmp`, each node's local error, and `worst_local` (the node
// with the lowest local SQNR). Throws Error when the trace is not paired (no meta.compare).
nlohmann::json diff_paired(const nlohmann::json& t, const DiffOptions& opts = {});

}  // namespace minfer::trace
