// The pre-tokenizer splits of the byte-level BPE vocabularies minfer reads (GGUF
// tokenizer.ggml.pre), written out by hand over code points. Qwen2's matches the regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*
//   |\s*[\r\n]+|\s+(?!\S)|\s+
// and Llama 3's ("llama-bpe") is the same with \p{N}{1,3} (digit groups of up to three) in place
// of \p{N}. Both find what the regex finds scanning left to right with ordered alternatives and
// backtracking, the way the reference (a JavaScript RegExp with the "u" flag) runs it: \s is
// ECMAScript's \s and the case-insensitive contractions are ASCII-only.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace minfer {

enum class PreTokenizer { Qwen2, LlamaBpe };

struct PreTokenizerInfo {
  const char* gguf_name;   // tokenizer.ggml.pre
  const char* hf_pattern;  // the Split regex of the HF tokenizer.json
  bool nfc;                // text is NFC-normalized first (Qwen's normalizer)
  bool ignore_merges;      // a piece spelled by one vocabulary token is that token (HF BPE ignore_merges)
  bool add_bos;            // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
};
const PreTokenizerInfo& info(PreTokenizer p);
std::optional<PreTokenizer> pre_tokenizer_from_gguf_name(std::string_view name);
std::optional<PreTokenizer> pre_tokenizer_from_hf_pattern(std::string_view pattern);
const char* supported_pre_tokenizers();  // "'qwen2' or 'llama-bpe'", for error messages

struct TextSpan {
  size_t begin, end;  // code point indices, end exclusive
};

// Consecutive, non-empty spans covering the whole text.
std::vector<TextSpan> pretokenize(PreTokenizer p, std::u32string_view text);

}  // namespace minfer
