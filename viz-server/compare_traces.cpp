#include "compare_traces.h"

#include "format/checked_trace.h"
#include "trace_diff.h"

namespace minfer::viz {

std::string compare_traces_json(const TraceIndex& index, const TraceEntry& a, const TraceEntry& b,
                                const trace::CancelFlag* cancel) {
  trace::DiffOptions opts;
  opts.label_a = a.name;
  opts.label_b = b.name;
  opts.cancel = cancel;
  const auto load = [&](const TraceEntry& e) {
    trace::ReadOptions read = index.read_options(e);
    read.cancel = cancel;
    return trace::load_checked_trace(e.path.string(), nullptr, read);
  };
  nlohmann::json result = trace::diff(load(a), load(b), opts);
  trace::stop_if_cancelled(cancel);
  return result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace minfer::viz
