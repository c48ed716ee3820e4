// /api/compare: the recorder's trace diff (recorder/trace_diff.h), not a second copy of it.
#pragma once
#include <string>

#include "trace_index.h"

namespace minfer::viz {

// The diff of traces a and b as JSON text (docs/trace-format.md, "Comparison output").
// Throws minfer::Error when a trace does not load or the two are not comparable (different
// models or graphs).
std::string compare_traces_json(const TraceEntry& a, const TraceEntry& b);

}  // namespace minfer::viz
