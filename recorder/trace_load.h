// Reading a trace file: plain JSON or gzip (detected by its magic bytes, so ".json.gz" and
// renamed files both work). A parse error names the file and the byte offset. Unfinished
// traces ("complete": false) load as they are; a ".partial" file cut mid-step by a crash is
// trimmed back to its last whole step (see trace_file.h) and reported as salvaged.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace minfer::trace {

struct LoadInfo {
  bool gzip = false;
  bool salvaged = false;  // a cut .partial file was trimmed to its last whole step
  size_t bytes = 0;       // uncompressed size
};

// Throws Error "<file>: ..." when the file cannot be read, is not JSON ("not valid JSON at
// byte N: ..."), or is not a minfer trace (no "format": "minfer-trace").
nlohmann::json load_trace(const std::string& path, LoadInfo* info = nullptr);

// Any JSON file (e.g. a schema), gzip or not, with the same error messages.
nlohmann::json load_json_file(const std::string& path);

// The text of a file, gunzipped when it is gzip. Throws Error naming the file.
std::string read_file_text(const std::string& path, bool* was_gzip = nullptr);

}  // namespace minfer::trace
