// Reading a trace file: plain JSON or gzip (detected by its magic bytes, so ".json.gz" and
// renamed files both work), through the capped reader (trace_input.h) and the depth-bounded
// parser (json_read.h). A parse error names the file, the byte offset and the field. Unfinished
// traces ("complete": false) load as they are; a ".partial" file cut mid-step by a crash is
// trimmed back to its last whole step (see trace_file.h) and reported as salvaged.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "format/trace_input.h"

namespace minfer::trace {

struct LoadInfo {
  bool gzip = false;
  bool salvaged = false;  // a cut .partial file was trimmed to its last whole step
  size_t bytes = 0;       // uncompressed size
};

// Throws Error "<file>: ..." when the file cannot be read, is not JSON ("not valid JSON at
// byte N (/field): ..."), is larger than options.max_bytes, or is not a minfer trace (no "format":
// "minfer-trace", no integer "version"). The fields are not checked: see checked_trace.h.
nlohmann::json load_trace(const std::string& path, LoadInfo* info = nullptr,
                          const ReadOptions& options = {});

// Any JSON file (e.g. a schema), gzip or not, with the same limits and error messages.
nlohmann::json load_json_file(const std::string& path, const ReadOptions& options = {});

}  // namespace minfer::trace
