// Fast JSON text output for the trace writer: numbers with 6 significant digits (non-finite
// values become null), strings escaped with invalid UTF-8 replaced (token pieces can be partial
// UTF-8 sequences, and a JSON document must stay valid UTF-8).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace minfer::trace {

void append_number(std::string& out, double v);  // "%.6g"-like shortest form; NaN/Inf -> null
void append_int(std::string& out, int64_t v);
void append_bool(std::string& out, bool v);
void append_string(std::string& out, std::string_view s);  // quoted and escaped
// Valid UTF-8 copy of s: every byte that does not start a complete, well-formed sequence
// becomes U+FFFD.
std::string sanitize_utf8(std::string_view s);
// Rounds v to 6 significant digits (the precision the trace keeps); non-finite unchanged.
double round6(double v);

}  // namespace minfer::trace
