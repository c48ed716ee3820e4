#include "tokenizer/pretokenize.h"

#include <cstdint>

#include "tokenizer/unicode.h"

namespace minfer {
namespace {

constexpr PreTokenizerInfo kQwen2{
    "qwen2",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    true, false, false};
constexpr PreTokenizerInfo kLlamaBpe{
    "llama-bpe",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    false, true, true};
constexpr PreTokenizer kAll[] = {PreTokenizer::Qwen2, PreTokenizer::LlamaBpe};

enum : uint8_t { kLetter = 1, kNumber = 2, kSpace = 4, kNewline = 8 };

uint8_t char_class(char32_t c) {
  uint8_t k = 0;
  if (unicode::is_letter(c)) k |= kLetter;
  if (unicode::is_number(c)) k |= kNumber;
  if (unicode::is_space(c)) k |= kSpace;
  if (c == '\r' || c == '\n') k |= kNewline;
  return k;
}

char32_t ascii_lower(char32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

class Matcher {
 public:
  Matcher(std::u32string_view t, size_t max_digits) : t_(t), k_(t.size()), max_digits_(max_digits) {
    for (size_t i = 0; i < t.size(); ++i) k_[i] = char_class(t[i]);
  }

  // End of the match that starts at i (always > i).
  size_t match_at(size_t i) const {
    if (size_t e = contraction(i)) return e;
    if (size_t e = letters(i)) return e;
    if (has(i, kNumber)) return digits(i);
    if (size_t e = symbols(i)) return e;
    return whitespace(i);
  }

 private:
  bool has(size_t i, uint8_t k) const { return i < t_.size() && (k_[i] & k); }
  bool is_symbol(size_t i) const { return i < t_.size() && !(k_[i] & (kLetter | kNumber | kSpace)); }
  size_t run_end(size_t i, uint8_t k) const {
    while (has(i, k)) ++i;
    return i;
  }

  // '(s|t|re|ve|m|ll|d), ASCII case-insensitive.
  size_t contraction(size_t i) const {
    if (t_[i] != '\'' || i + 1 >= t_.size()) return 0;
    char32_t a = ascii_lower(t_[i + 1]);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 >= t_.size()) return 0;
    char32_t b = ascii_lower(t_[i + 2]);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return 0;
  }

  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t letters(size_t i) const {
    if (!(k_[i] & (kLetter | kNumber | kNewline)) && has(i + 1, kLetter)) return run_end(i + 1, kLetter);
    if (k_[i] & kLetter) return run_end(i, kLetter);
    return 0;
  }

  // \p{N} (qwen2) or \p{N}{1,3} (llama-bpe)
  size_t digits(size_t i) const {
    size_t j = i + 1;
    while (j - i < max_digits_ && has(j, kNumber)) ++j;
    return j;
  }

  // ' '?[^\s\p{L}\p{N}]+[\r\n]*
  size_t symbols(size_t i) const {
    size_t j = (t_[i] == ' ' && is_symbol(i + 1)) ? i + 1 : i;
    if (!is_symbol(j)) return 0;
    while (is_symbol(j)) ++j;
    return run_end(j, kNewline);
  }

  // \s*[\r\n]+ | \s+(?!\S) | \s+   (t_[i] is whitespace here: every other class matched above)
  size_t whitespace(size_t i) const {
    size_t j = run_end(i, kSpace);
    for (size_t k = j; k > i; --k)
      if (k_[k - 1] & kNewline) return k;  // backtracking \s* stops at the last newline
    if (j == t_.size() || j - i == 1) return j;
    return j - 1;  // leave one space to start the next word
  }

  std::u32string_view t_;
  std::vector<uint8_t> k_;
  size_t max_digits_;
};

}  // namespace

const PreTokenizerInfo& info(PreTokenizer p) { return p == PreTokenizer::LlamaBpe ? kLlamaBpe : kQwen2; }

std::optional<PreTokenizer> pre_tokenizer_from_gguf_name(std::string_view name) {
  for (PreTokenizer p : kAll)
    if (name == info(p).gguf_name) return p;
  return std::nullopt;
}

std::optional<PreTokenizer> pre_tokenizer_from_hf_pattern(std::string_view pattern) {
  for (PreTokenizer p : kAll)
    if (pattern == info(p).hf_pattern) return p;
  return std::nullopt;
}

const char* supported_pre_tokenizers() { return "'qwen2' or 'llama-bpe'"; }

std::vector<TextSpan> pretokenize(PreTokenizer p, std::u32string_view text) {
  Matcher m(text, p == PreTokenizer::LlamaBpe ? 3 : 1);
  std::vector<TextSpan> spans;
  for (size_t i = 0; i < text.size();) {
    size_t e = m.match_at(i);
    spans.push_back({i, e});
    i = e;
  }
  return spans;
}

}  // namespace minfer
