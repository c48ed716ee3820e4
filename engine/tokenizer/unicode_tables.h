// Unicode data for the tokenizer, generated into unicode_tables.cpp by
// scripts/gen-unicode-tables.mjs (see there for the source and how it is checked).
#pragma once
#include <cstddef>
#include <cstdint>

namespace minfer::unicode_tables {

struct CodeRange { char32_t lo, hi; };                      // inclusive
struct ClassRange { char32_t lo, hi; uint8_t rank; };        // rank of the combining class
struct Decomposition { char32_t cp; uint16_t offset; uint8_t length; };  // into the pool
struct Composition { char32_t first, second, composite; };

extern const char* const kUnicodeVersion;
extern const CodeRange kLetters[];
extern const size_t kLettersCount;
extern const CodeRange kNumbers[];
extern const size_t kNumbersCount;
extern const CodeRange kSpaces[];
extern const size_t kSpacesCount;
extern const ClassRange kCombiningRanks[];
extern const size_t kCombiningRanksCount;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionsCount;
extern const char32_t kDecompositionPool[];
extern const Composition kCompositions[];
extern const size_t kCompositionsCount;
// Text made only of code points below this is already in NFC.
extern const char32_t kNfcQuickLimit;

}  // namespace minfer::unicode_tables
