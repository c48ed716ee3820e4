// Validation of a loaded trace: the JSON Schema of its version first (2 or 3; trace_schema.h),
// then the consistency the schema cannot
// express (node ids exist in the referenced graph, grid sizes, histogram totals, step order,
// the chosen token's rank against the top-k, ...).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cancel.h"

namespace minfer::trace {

// Problems found, each "<JSON pointer>: <what>"; empty when the trace is valid. Consistency
// checks run only when the schema passes (they rely on its shapes). A version without a schema
// here is one problem at /version. first_step > 0: `trace` holds its steps from that index on
// (the steps a recovery adds, checked without loading the ones before; consistency errors then
// name the steps by their index). Throws Cancelled (cancel.h) once `cancel` is set.
std::vector<std::string> validate_trace(const nlohmann::json& trace, size_t max_errors = 50, size_t first_step = 0,
                                        const CancelFlag* cancel = nullptr);

// Only the consistency checks (the schema must already pass).
std::vector<std::string> check_consistency(const nlohmann::json& trace, size_t max_errors = 50, size_t first_step = 0);

}  // namespace minfer::trace
