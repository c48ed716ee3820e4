#include "tokenizer/nfc.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/unicode_tables.h"

namespace minfer::unicode {
namespace ut = unicode_tables;

namespace {

// Hangul syllables decompose and compose algorithmically (Unicode ch. 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

bool is_hangul_syllable(char32_t c) { return c >= kSBase && c < kSBase + kSCount; }

void append_decomposition(std::u32string& out, char32_t c) {
  if (c < ut::kNfcQuickLimit) {
    out.push_back(c);
    return;
  }
  if (is_hangul_syllable(c)) {
    char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const ut::Decomposition* begin = ut::kDecompositions;
  const ut::Decomposition* end = begin + ut::kDecompositionsCount;
  const ut::Decomposition* it =
      std::lower_bound(begin, end, c, [](const ut::Decomposition& d, char32_t x) { return d.cp < x; });
  if (it != end && it->cp == c) {
    out.append(ut::kDecompositionPool + it->offset, it->length);
  } else {
    out.push_back(c);
  }
}

// The primary composite of (first, second), or 0 when there is none.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (is_hangul_syllable(first) && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount)
    return first + (second - kTBase);
  const ut::Composition* begin = ut::kCompositions;
  const ut::Composition* end = begin + ut::kCompositionsCount;
  const ut::Composition* it = std::lower_bound(
      begin, end, std::pair{first, second}, [](const ut::Composition& c, std::pair<char32_t, char32_t> k) {
        return c.first < k.first || (c.first == k.first && c.second < k.second);
      });
  return (it != end && it->first == first && it->second == second) ? it->composite : 0;
}

}  // namespace

std::u32string nfc(std::u32string_view text) {
  bool quick = std::all_of(text.begin(), text.end(), [](char32_t c) {
    return c < ut::kNfcQuickLimit || c >= kRawByteBase;
  });
  if (quick) return std::u32string(text);

  std::u32string d;
  d.reserve(text.size() + 8);
  for (char32_t c : text) append_decomposition(d, c);

  // Canonical ordering: a stable sort of every run of non-starters by combining class.
  for (size_t i = 1; i < d.size(); ++i) {
    uint8_t cc = combining_rank(d[i]);
    if (cc == 0) continue;
    for (size_t j = i; j > 0 && combining_rank(d[j - 1]) > cc; --j) std::swap(d[j - 1], d[j]);
  }

  // Canonical composition: each character joins the last starter unless something between
  // them blocks it (a starter, or a mark of the same or a higher class).
  std::u32string out;
  out.reserve(d.size());
  ptrdiff_t starter = -1;
  for (char32_t c : d) {
    uint8_t cc = combining_rank(c);
    if (starter >= 0) {
      bool adjacent = static_cast<ptrdiff_t>(out.size()) - 1 == starter;
      if (adjacent || combining_rank(out.back()) < cc) {
        if (char32_t comp = compose_pair(out[starter], c)) {
          out[starter] = comp;
          continue;
        }
      }
    }
    if (cc == 0) starter = static_cast<ptrdiff_t>(out.size());
    out.push_back(c);
  }
  return out;
}

}  // namespace minfer::unicode
