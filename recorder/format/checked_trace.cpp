#include "format/checked_trace.h"

#include "core/error.h"
#include "format/trace_check.h"
#include "format/trace_schema.h"

namespace minfer::trace {

using nlohmann::json;

void require_valid_trace(const json& trace, const std::string& what, const CancelFlag* cancel) {
  if (!trace.is_object() || !trace.contains("version") || (trace["version"] != 2 && trace["version"] != 3))
    fail(what, ": trace version ", trace.is_object() && trace.contains("version") ? trace["version"].dump() : "?",
         " is not supported here (versions ", validated_versions(), ")");
  constexpr size_t kShown = 3;
  const auto errs = validate_trace(trace, kShown + 1, 0, cancel);
  if (errs.empty()) return;
  std::string msg = what + ": not a valid minfer-trace v" + trace["version"].dump() + ": " + errs[0];
  for (size_t i = 1; i < errs.size() && i < kShown; ++i) msg += "; " + errs[i];
  if (errs.size() > 1) msg += " (`minfer-trace validate` lists every problem)";
  fail(msg);
}

json load_checked_trace(const std::string& path, LoadInfo* info, const ReadOptions& options) {
  json t = load_trace(path, info, options);
  require_valid_trace(t, options.label.empty() ? path : options.label, options.cancel);
  return t;
}

}  // namespace minfer::trace
