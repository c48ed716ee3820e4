// /api/compare: the recorder's trace diff (recorder/trace_diff.h), not a second copy of it.
#pragma once
#include <string>

#include "cancel.h"
#include "trace_index.h"

namespace minfer::viz {

// The diff of traces a and b of `index` as JSON text (docs/trace-format.md, "Comparison
// output"). Both must validate first (the diff reads fields unchecked). Throws minfer::Error,
// naming the file by its name, when a trace does not load or validate, or the two are not
// comparable (different models or graphs); trace::Cancelled once `cancel` (null: never) is
// set, from the reads, the validation or the diff, whichever is running.
std::string compare_traces_json(const TraceIndex& index, const TraceEntry& a, const TraceEntry& b,
                                const trace::CancelFlag* cancel = nullptr);

}  // namespace minfer::viz
