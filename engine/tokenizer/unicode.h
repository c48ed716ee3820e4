// UTF-8 <-> code points and the character classes the Qwen2 pre-tokenizer needs.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace minfer::unicode {

// A byte that is not part of a valid UTF-8 sequence decodes to kRawByteBase + byte: it passes
// through normalization and splitting as a "symbol" character and is written back unchanged,
// so byte-level BPE still round-trips text that is not valid UTF-8.
constexpr char32_t kRawByteBase = 0x110000;

std::u32string decode_utf8(std::string_view s);
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view cps);

bool is_letter(char32_t cp);   // \p{L}
bool is_number(char32_t cp);   // \p{N}
bool is_space(char32_t cp);    // ECMAScript \s (what the reference tokenizer's regex uses)
// Rank of the canonical combining class: 0 for starters; order-preserving otherwise.
uint8_t combining_rank(char32_t cp);

}  // namespace minfer::unicode
