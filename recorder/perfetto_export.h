// Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing) of a trace's
// timings as complete ("X") events. Host clock: steps and nodes on two CPU tracks. GPU (CUDA
// traces with kernel records): a step slice over each step's kernels ("GPU: steps"), one slice
// per node spanning its kernels with those kernels nested inside it ("GPU: nodes > kernels"),
// and kernels without a node on "GPU: unattributed kernels".
#pragma once
#include <nlohmann/json.hpp>

namespace minfer::trace {

// Times come from step.start_ms / node.start_us when recorded; otherwise steps are laid end
// to end and nodes one after another inside their step. Kernel times are step.start_ms plus
// their start_ns. Slices on one track nest or are disjoint (Perfetto's rule): where the spans
// of two nodes (or two steps, or two unattributed kernels) overlap, the later one goes to an
// extra lane of that track; a kernel that overlaps the previous kernel of its own node goes to
// "GPU: kernels overlapping their node's previous kernel".
nlohmann::json to_perfetto(const nlohmann::json& trace);

}  // namespace minfer::trace
