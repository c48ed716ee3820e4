// GPT-2's byte-level alphabet: every byte maps to one printable code point (printable Latin-1
// bytes map to themselves, the rest to U+0100 onwards), so vocabulary strings never contain raw
// spaces or control bytes. "Ġ" (U+0120) is the space byte.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace minfer::byte_level {

char32_t byte_to_char(uint8_t b);
int char_to_byte(char32_t c);  // -1 for a code point outside the alphabet

// Raw bytes -> the vocabulary spelling (UTF-8 of the mapped code points).
std::string encode(std::string_view bytes);
// Vocabulary spelling -> raw bytes. Code points outside the alphabet are kept as UTF-8;
// `ok` (when given) turns false if there was one.
std::string decode(std::string_view spelling, bool* ok = nullptr);

}  // namespace minfer::byte_level
