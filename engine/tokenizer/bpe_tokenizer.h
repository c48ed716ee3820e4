// The byte-level BPE tokenizer behind Tokenizer::from_gguf, constructible from plain vectors
// so tests can build small vocabularies without a GGUF file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"

namespace minfer {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct TokenizerVocab {
  std::vector<std::string> tokens;   // byte-level spellings ("Ġthe"); control tokens literally
  std::vector<int32_t> types;        // TokenType per token; empty means all Normal
  std::vector<std::string> merges;   // "left right", rank order
  int32_t bos_id = -1, eos_id = -1, pad_id = -1, eot_id = -1;
  PreTokenizer pre = PreTokenizer::Qwen2;
  bool add_bos = false;
  std::string source = "tokenizer";  // names the file in error messages
};

// Throws Error (naming vocab.source) when the vocabulary is inconsistent.
std::unique_ptr<Tokenizer> make_bpe_tokenizer(TokenizerVocab vocab);

}  // namespace minfer
