#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/bpe_merges.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/unicode.h"

namespace minfer {
namespace {

bool matched_literally(TokenType t) { return t == TokenType::Control || t == TokenType::UserDefined; }

// Control tokens that end a turn or a text in the Qwen and Llama 3 vocabularies.
bool is_end_spelling(const std::string& s) {
  for (const char* e : {"<|im_end|>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|eom_id|>"})
    if (s == e) return true;
  return false;
}

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(TokenizerVocab v)
      : v_(std::move(v)), merges_(v_.tokens, v_.merges, v_.source) {
    for (size_t i = 0; i < v_.tokens.size(); ++i) {
      if (!matched_literally(type(i)) || v_.tokens[i].empty()) continue;
      specials_by_first_byte_[static_cast<uint8_t>(v_.tokens[i][0])].push_back(static_cast<int32_t>(i));
      if (is_end_spelling(v_.tokens[i])) end_ids_.push_back(static_cast<int32_t>(i));
    }
    if (info(v_.pre).ignore_merges)
      for (size_t i = 0; i < v_.tokens.size(); ++i)
        if (type(i) == TokenType::Normal) whole_piece_.emplace(byte_level::decode(v_.tokens[i]), static_cast<int32_t>(i));
    // Longest first, so the first spelling that matches is the longest match.
    for (auto& ids : specials_by_first_byte_)
      std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return v_.tokens[a].size() > v_.tokens[b].size(); });
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    size_t section = 0;
    for (size_t i = 0; i < text.size();) {
      int32_t special = special_at(text, i);
      if (special < 0) {
        ++i;
        continue;
      }
      encode_section(text.substr(section, i - section), ids);
      ids.push_back(special);
      i += v_.tokens[special].size();
      section = i;
    }
    encode_section(text.substr(section), ids);
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string out;
    for (int32_t id : ids) out += token_bytes(id);
    return out;
  }

  std::string token_bytes(int32_t id) const override {
    if (id < 0 || id >= vocab_size())
      fail(v_.source, ": token id ", id, " is outside the vocabulary [0, ", vocab_size(), ")");
    TokenType t = type(id);
    if (t == TokenType::Normal || t == TokenType::Byte || t == TokenType::Undefined)
      return byte_level::decode(v_.tokens[id]);
    return v_.tokens[id];  // control, user-defined, unused, unknown: their literal text
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(v_.tokens.size()); }
  int32_t eos_id() const override { return v_.eos_id; }
  int32_t bos_id() const override { return v_.bos_id; }
  bool adds_bos() const override { return v_.add_bos; }
  bool is_end_of_generation(int32_t id) const override {
    return id == v_.eos_id || (id >= 0 && id == v_.eot_id) ||
           std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
  }

 private:
  TokenType type(size_t i) const { return v_.types.empty() ? TokenType::Normal : static_cast<TokenType>(v_.types[i]); }

  // The longest special/added token spelled at text[i], or -1.
  int32_t special_at(std::string_view text, size_t i) const {
    for (int32_t id : specials_by_first_byte_[static_cast<uint8_t>(text[i])]) {
      const std::string& s = v_.tokens[id];
      if (text.compare(i, s.size(), s) == 0) return id;
    }
    return -1;
  }

  // Ordinary text between special tokens: NFC (Qwen), the pre-tokenizer's split, then BPE per
  // piece (or the piece's own token, where the vocabulary ignores merges for whole pieces).
  void encode_section(std::string_view text, std::vector<int32_t>& ids) const {
    if (text.empty()) return;
    std::u32string cps = unicode::decode_utf8(text);
    if (info(v_.pre).nfc) cps = unicode::nfc(cps);
    for (const TextSpan& span : pretokenize(v_.pre, cps)) {
      std::string piece = unicode::encode_utf8(std::u32string_view(cps).substr(span.begin, span.end - span.begin));
      if (auto whole = whole_piece_.find(piece); whole != whole_piece_.end()) {
        ids.push_back(whole->second);
        continue;
      }
      std::vector<int32_t> piece_ids = merges_.encode_piece(piece);
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
  }

  TokenizerVocab v_;
  BpeMerges merges_;
  std::array<std::vector<int32_t>, 256> specials_by_first_byte_;
  std::vector<int32_t> end_ids_;
  std::unordered_map<std::string, int32_t> whole_piece_;  // raw bytes -> token, when merges are ignored
};

void check_id(const TokenizerVocab& v, int32_t id, const char* key) {
  if (id < -1 || id >= static_cast<int64_t>(v.tokens.size()))
    fail(v.source, ": ", key, " = ", id, " is outside the vocabulary [0, ", v.tokens.size(), ")");
}

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(TokenizerVocab v) {
  if (v.tokens.empty()) fail(v.source, ": tokenizer.ggml.tokens is empty");
  if (v.tokens.size() > static_cast<size_t>(INT32_MAX))
    fail(v.source, ": tokenizer.ggml.tokens has ", v.tokens.size(), " entries, too many for 32-bit ids");
  if (!v.types.empty() && v.types.size() != v.tokens.size())
    fail(v.source, ": tokenizer.ggml.token_type has ", v.types.size(), " entries but tokenizer.ggml.tokens has ",
         v.tokens.size());
  for (size_t i = 0; i < v.types.size(); ++i)
    if (v.types[i] < 0 || v.types[i] > static_cast<int32_t>(TokenType::Byte))
      fail(v.source, ": tokenizer.ggml.token_type[", i, "] = ", v.types[i], " is not a known token type (0..6)");
  check_id(v, v.bos_id, "tokenizer.ggml.bos_token_id");
  check_id(v, v.eos_id, "tokenizer.ggml.eos_token_id");
  check_id(v, v.pad_id, "tokenizer.ggml.padding_token_id");
  check_id(v, v.eot_id, "tokenizer.ggml.eot_token_id");
  if (v.add_bos && v.bos_id < 0)
    fail(v.source, ": tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is absent");
  return std::make_unique<BpeTokenizer>(std::move(v));
}

}  // namespace minfer
