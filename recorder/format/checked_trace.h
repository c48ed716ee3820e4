// A trace ready for the readers (summary, diff, export, the server's comparison): loaded,
// version 2 or 3, and valid against its schema and the consistency checks. The readers index
// fields without checking each one, so nothing reaches them before this passes.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "format/trace_load.h"

namespace minfer::trace {

// Throws Error "<what>: not a valid minfer-trace v3: /steps/0: missing required field
// 'logits' ..." naming the first problems; Cancelled (cancel.h) once `cancel` is set.
void require_valid_trace(const nlohmann::json& trace, const std::string& what, const CancelFlag* cancel = nullptr);

// load_trace + version 2 or 3 + require_valid_trace; both stop once options.cancel is set.
nlohmann::json load_checked_trace(const std::string& path, LoadInfo* info = nullptr,
                                  const ReadOptions& options = {});

}  // namespace minfer::trace
