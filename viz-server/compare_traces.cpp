#include "compare_traces.h"

#include "checked_trace.h"
#include "trace_diff.h"

namespace minfer::viz {

std::string compare_traces_json(const TraceIndex& index, const TraceEntry& a, const TraceEntry& b) {
  trace::DiffOptions opts;
  opts.label_a = a.name;
  opts.label_b = b.name;
  nlohmann::json result =
      trace::diff(trace::load_checked_trace(a.path.string(), nullptr, index.read_options(a)),
                  trace::load_checked_trace(b.path.string(), nullptr, index.read_options(b)), opts);
  return result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace minfer::viz
