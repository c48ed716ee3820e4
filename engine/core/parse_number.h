// The one parser of every number a user sets, by flag or environment variable. The whole text
// must be the number, in decimal (no sign for an unsigned one, no spaces, no trailing letters),
// within [lo, hi]; anything else is an Error naming the flag or variable, the range and the
// text given, e.g. "MINFER_THREADS: expected an integer from 1 to 1024, got '100000'". A value
// beyond the machine word is out of range, never wrapped ("-1" is no seed) or clamped.
#pragma once
#include <cstdint>
#include <string_view>

namespace minfer {

int64_t parse_int(std::string_view text, std::string_view what, int64_t lo, int64_t hi);
uint64_t parse_uint(std::string_view text, std::string_view what, uint64_t lo, uint64_t hi);
// A finite decimal number (no nan, inf or hex).
double parse_number(std::string_view text, std::string_view what, double lo, double hi);
// A positive count of bytes, optionally with K, M or G (binary units: 1024, 1024^2, 1024^3).
uint64_t parse_byte_size(std::string_view text, std::string_view what);
// (An environment variable goes through the same checks: env_int / env_number of
// core/environment.h, on the environment a program's main read.)

}  // namespace minfer
