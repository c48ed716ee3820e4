#include "json_out.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace minfer::trace {

namespace {

// "%.6g" of v for 1e-4 <= |v| < 1e6 (fixed notation: nearly every value of a trace) with one
// multiplication instead of the general conversion, which a 0.5 MB decode step calls ~30,000
// times. False where it cannot be sure of the rounding: the caller then uses std::to_chars.
bool append_g6_fixed(std::string& out, double v) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  static constexpr double kNextDigit[] = {1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5};
  const double a = std::fabs(v);
  if (!(a >= 1e-4 && a < 1e6)) return false;
  int e = -4;  // the decimal exponent of a's first digit
  while (e < 5 && a >= kNextDigit[e + 4]) ++e;
  // p = a * 10^(5-e) has 6 integer digits; the one rounding of the product is below 2e-10, so
  // a fraction that far from one half rounds as the exact decimal value would.
  const double p = a * kPow10[5 - e];
  uint64_t m = static_cast<uint64_t>(p);  // p > 0: truncation is the floor
  const double frac = p - static_cast<double>(m);
  if (std::fabs(frac - 0.5) < 1e-6) return false;
  m += frac > 0.5 ? 1 : 0;
  if (m < 100000 || m >= 1000000) return false;  // the exponent guess was off by one (a boundary)
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char digits[6];  // as three independent pairs: a chain of six divisions by 10 is slower
  const uint64_t pairs[3] = {m / 10000, m / 100 % 100, m % 100};
  for (int i = 0; i < 3; ++i) {
    digits[2 * i] = kPairs[2 * pairs[i]];
    digits[2 * i + 1] = kPairs[2 * pairs[i] + 1];
  }
  int last = 5;  // the last digit to print: trailing zeros after the point go
  while (last > e && digits[last] == '0') --last;
  char buf[16];  // at most "-0.000123456"
  char* o = buf;
  if (v < 0) *o++ = '-';
  if (e < 0) {
    *o++ = '0';
    *o++ = '.';
    for (int i = e + 1; i < 0; ++i) *o++ = '0';
    for (int i = 0; i <= last; ++i) *o++ = digits[i];
  } else {
    for (int i = 0; i <= e; ++i) *o++ = digits[i];
    if (last > e) *o++ = '.';
    for (int i = e + 1; i <= last; ++i) *o++ = digits[i];
  }
  out.append(buf, o);
  return true;
}

}  // namespace

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  if (append_g6_fixed(out, v)) return;
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  out.append(buf, r.ptr);
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_bool(std::string& out, bool v) { out += v ? "true" : "false"; }

double round6(double v) {
  if (!std::isfinite(v)) return v;
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 (RFC 3629 table).
size_t utf8_len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) { n = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
  else if (c >= 0xF0 && c <= 0xF4) { n = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_len(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

void append_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = utf8_len(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

}  // namespace minfer::trace
