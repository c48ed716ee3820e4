#include "format/trace_schema.h"

#include "core/error.h"

namespace minfer::trace {

const nlohmann::json& trace_schema(int version) {
  static const nlohmann::json v2 = nlohmann::json::parse(trace_schema_v2_text());
  static const nlohmann::json v3 = nlohmann::json::parse(trace_schema_v3_text());
  if (version == 2) return v2;
  if (version == 3) return v3;
  fail("trace version ", version, " has no schema here (versions ", validated_versions(), ")");
}

const char* validated_versions() { return "2 and 3"; }

}  // namespace minfer::trace
