#include "trace_schema.h"

namespace minfer::trace {

const nlohmann::json& trace_schema_v2() {
  static const nlohmann::json schema = nlohmann::json::parse(trace_schema_v2_text());
  return schema;
}

}  // namespace minfer::trace
