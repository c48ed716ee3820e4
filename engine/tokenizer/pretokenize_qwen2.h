// The Qwen2 pre-tokenizer split, written out by hand over code points. It matches what the
// regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*
//   |\s*[\r\n]+|\s+(?!\S)|\s+
// finds, scanning left to right with ordered alternatives and backtracking, the way the
// reference (a JavaScript RegExp with the "u" flag) runs it: \s is ECMAScript's \s and the
// case-insensitive contractions are ASCII-only.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

namespace minfer {

struct TextSpan {
  size_t begin, end;  // code point indices, end exclusive
};

// Consecutive, non-empty spans covering the whole text.
std::vector<TextSpan> pretokenize_qwen2(std::u32string_view text);

}  // namespace minfer
