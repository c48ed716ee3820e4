// Chrome trace-event JSON (opens in ui.perfetto.dev and chrome://tracing) of a trace's
// timings: steps and nodes as complete ("X") events on a CPU track, kernels on a GPU track.
#pragma once
#include <nlohmann/json.hpp>

namespace minfer::trace {

// Times come from step.start_ms / node.start_us when recorded; otherwise steps are laid end
// to end and nodes one after another inside their step.
nlohmann::json to_perfetto(const nlohmann::json& trace);

}  // namespace minfer::trace
