// The trace schemas (traces/schema/minfer-trace-v<N>.schema.json), compiled into the library:
// version 3 for what the recorder writes, version 2 for older files.
#pragma once
#include <nlohmann/json.hpp>

namespace minfer::trace {

const char* trace_schema_v2_text();
const char* trace_schema_v3_text();
// The parsed schema of a trace version (parsed once); Error for a version without one.
const nlohmann::json& trace_schema(int version);
// The versions trace_schema knows, for messages: "2 and 3".
const char* validated_versions();

}  // namespace minfer::trace
