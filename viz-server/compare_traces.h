// /api/compare: the recorder's trace diff (recorder/trace_diff.h), not a second copy of it.
#pragma once
#include <string>

#include "trace_index.h"

namespace minfer::viz {

// The diff of traces a and b of `index` as JSON text (docs/trace-format.md, "Comparison
// output"). Both must validate first (the diff reads fields unchecked). Throws minfer::Error,
// naming the file by its name, when a trace does not load or validate, or the two are not
// comparable (different models or graphs).
std::string compare_traces_json(const TraceIndex& index, const TraceEntry& a, const TraceEntry& b);

}  // namespace minfer::viz
