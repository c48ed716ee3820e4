#include "tokenizer/unicode.h"

#include <algorithm>

#include "tokenizer/unicode_tables.h"

namespace minfer::unicode {
namespace ut = unicode_tables;

namespace {

bool in_ranges(const ut::CodeRange* ranges, size_t n, char32_t cp) {
  const ut::CodeRange* end = ranges + n;
  const ut::CodeRange* it =
      std::upper_bound(ranges, end, cp, [](char32_t c, const ut::CodeRange& r) { return c < r.lo; });
  return it != ranges && cp <= (it - 1)->hi;
}

// Length of a valid UTF-8 sequence at s[i], or 0 when the bytes there are not one
// (overlong forms, surrogates, values past U+10FFFF and truncated sequences are invalid).
int valid_sequence_length(std::string_view s, size_t i, char32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  int len;
  char32_t min;
  if (c < 0x80) { cp = c; return 1; }
  if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (int k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    int len = valid_sequence_length(s, i, cp);
    if (len == 0) {
      out.push_back(kRawByteBase + static_cast<uint8_t>(s[i]));
      ++i;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= kRawByteBase) {
    out.push_back(static_cast<char>(cp - kRawByteBase));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append_utf8(out, c);
  return out;
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(ut::kLetters, ut::kLettersCount, cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(ut::kNumbers, ut::kNumbersCount, cp);
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return in_ranges(ut::kSpaces, ut::kSpacesCount, cp);
}

uint8_t combining_rank(char32_t cp) {
  if (cp < ut::kNfcQuickLimit) return 0;
  const ut::ClassRange* begin = ut::kCombiningRanks;
  const ut::ClassRange* end = begin + ut::kCombiningRanksCount;
  const ut::ClassRange* it =
      std::upper_bound(begin, end, cp, [](char32_t c, const ut::ClassRange& r) { return c < r.lo; });
  return (it != begin && cp <= (it - 1)->hi) ? (it - 1)->rank : 0;
}

}  // namespace minfer::unicode
