#include "compare_traces.h"

#include "trace_diff.h"
#include "trace_load.h"

namespace minfer::viz {

std::string compare_traces_json(const TraceEntry& a, const TraceEntry& b) {
  trace::DiffOptions opts;
  opts.label_a = a.name;
  opts.label_b = b.name;
  nlohmann::json result = trace::diff(trace::load_trace(a.path.string()),
                                      trace::load_trace(b.path.string()), opts);
  return result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace minfer::viz
