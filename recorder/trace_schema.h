// The trace schema (traces/schema/minfer-trace-v2.schema.json), compiled into the library.
#pragma once
#include <nlohmann/json.hpp>

namespace minfer::trace {

const char* trace_schema_v2_text();
const nlohmann::json& trace_schema_v2();  // parsed once

}  // namespace minfer::trace
