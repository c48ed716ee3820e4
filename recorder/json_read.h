// The one JSON parser for files from outside: nesting depth is bounded (deep nesting would
// overflow the stack later, when the value is compared, printed or freed), and every error
// names the file, the byte offset and the field being read ("t.json: not valid JSON at byte
// 812 (/steps/0/time_ms): number 1e309 is out of range").
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace minfer::trace {

class TraceInput;

// Traces nest about 6 deep; 64 leaves room for anything a user adds under meta.
inline constexpr size_t kMaxJsonDepth = 64;

struct JsonReadOptions {
  size_t max_depth = kMaxJsonDepth;
  // Values (scalars and containers) kept in the document (skipped ones do not count). The byte
  // cap alone does not bound memory: "[0,0,0,...]" makes a 16-byte value of 2 bytes of text.
  uint64_t max_values = UINT64_MAX;
  // Members whose values the caller never needs (key, nesting depth of the object holding it):
  // skipped while parsing, so they cost no memory. Null = keep everything.
  std::function<bool(const std::string& key, size_t depth)> skip_member;
};

// A JSON text that does not parse (syntax, depth, number range). The message is complete.
struct JsonParseError : Error {
  using Error::Error;
  size_t byte = 0;
};

// Parses `text`; `what` (usually the file name) starts every error message.
nlohmann::json parse_json_text(std::string_view text, const std::string& what,
                               const JsonReadOptions& options = {});

// Parses the JSON text streamed from `in` (memory: the result, not the text).
nlohmann::json parse_json_stream(TraceInput& in, const std::string& what,
                                 const JsonReadOptions& options = {});

}  // namespace minfer::trace
