#include "core/parse_number.h"

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "core/error.h"

namespace minfer {
namespace {

// The text as given, cut short: a hostile value is not copied whole into a message.
std::string quoted(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string q(1, '\'');
  q.append(text.substr(0, kMax));
  q.append(text.size() > kMax ? "...'" : "'");
  return q;
}

// The whole text as a T, or nothing (from_chars takes no spaces or '+'; unsigned takes no '-').
template <class T>
bool whole(std::string_view text, T& v) {
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  return ec == std::errc() && p == end && !text.empty();
}

template <class T>
T integer(std::string_view text, std::string_view what, T lo, T hi) {
  T v{};
  if (!whole(text, v) || v < lo || v > hi)
    fail(what, ": expected an integer from ", lo, " to ", hi, ", got ", quoted(text));
  return v;
}

}  // namespace

int64_t parse_int(std::string_view text, std::string_view what, int64_t lo, int64_t hi) {
  return integer(text, what, lo, hi);
}

uint64_t parse_uint(std::string_view text, std::string_view what, uint64_t lo, uint64_t hi) {
  return integer(text, what, lo, hi);
}

double parse_number(std::string_view text, std::string_view what, double lo, double hi) {
  double v = 0;
  if (!whole(text, v) || !std::isfinite(v) || v < lo || v > hi)
    fail(what, ": expected a number from ", lo, " to ", hi, ", got ", quoted(text));
  return v;
}

uint64_t parse_byte_size(std::string_view text, std::string_view what) {
  uint64_t unit = 1;
  std::string_view digits = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': unit = uint64_t(1) << 10; break;
      case 'M': case 'm': unit = uint64_t(1) << 20; break;
      case 'G': case 'g': unit = uint64_t(1) << 30; break;
      default: break;
    }
    if (unit > 1) digits.remove_suffix(1);
  }
  uint64_t v = 0;
  if (!whole(digits, v) || v == 0 || v > UINT64_MAX / unit)
    fail(what, ": expected a size in bytes from 1 to ", UINT64_MAX,
         ", optionally with K, M or G (1024, 1024^2, 1024^3), got ", quoted(text));
  return v * unit;
}

}  // namespace minfer
