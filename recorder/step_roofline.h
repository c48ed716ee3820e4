// One step's roofline (docs/trace-format.md, "Roofline"): the step's CUPTI kernels grouped by the
// nodes they compute (a fused kernel's `covers`, merged with every other kernel of those nodes),
// each group's work (node_work.h, summed over its nodes), GPU time (its kernels' durations), the
// time it would take at its roof, and what it achieved against it.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device_roofs.h"
#include "node_work.h"

namespace minfer::trace {

struct RooflinePoint {
  int node = -1;              // the node the group is named by: its last node in execution order
  std::vector<int> nodes;     // every node its kernels compute, ascending
  double bytes = 0, ops = 0;
  double ops_by_kind[3] = {}; // ops per OpsKind, for the compute roof of a mixed group
  OpsKind kind = OpsKind::F32;  // the kind with the most ops: the ceiling it is drawn against
  double gpu_us = 0;
  double roof_us = -1;        // max(bytes / bandwidth, Σ ops / peak of their kind); -1: roofs unknown
  double fraction = -1;       // roof_us / gpu_us, in (0, 1] unless the counts undercount; -1: unknown
  double lost_us = -1;        // gpu_us - roof_us
  bool bandwidth_bound = false;  // the bandwidth term is the larger one
  double intensity() const { return bytes > 0 ? ops / bytes : 0; }
};

// `step` a trace Step with its kernels, `nodes` its graph's nodes. Empty when the step has no
// attributed kernels (CPU traces, steps outside --trace-kernels).
std::vector<RooflinePoint> step_roofline(const nlohmann::json& meta, const nlohmann::json& step,
                                         const nlohmann::json& nodes, const Roofs& roofs);

}  // namespace minfer::trace
