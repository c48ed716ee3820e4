// GPT-2 byte-level BPE tokenizer read from GGUF metadata (tokenizer.ggml.*), with the
// pre-tokenizer split tokenizer.ggml.pre names (qwen2, llama-bpe) and special/added tokens
// matched in the text before BPE.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace minfer {

class GGUFFile;
class GGUFWriter;

class Tokenizer {
 public:
  static std::unique_ptr<Tokenizer> from_gguf(const GGUFFile& f);  // throws Error on bad metadata
  virtual ~Tokenizer() = default;

  // Text (UTF-8) to ids. Special/added tokens in the text ("<|im_start|>") become their ids.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // A prompt as the model reads it: BOS first when the GGUF asks for it (add_bos_token), then encode.
  std::vector<int32_t> encode_prompt(std::string_view text) const {
    std::vector<int32_t> ids;
    if (adds_bos()) ids.push_back(bos_id());
    const std::vector<int32_t> body = encode(text);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
  }
  // Ids to UTF-8 bytes (control tokens decode to their literal text).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // The bytes one token stands for (may be a partial UTF-8 sequence).
  virtual std::string token_bytes(int32_t id) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t eos_id() const = 0;     // -1 when absent
  virtual int32_t bos_id() const = 0;     // -1 when absent
  virtual bool adds_bos() const = 0;      // tokenizer.ggml.add_bos_token (a bos id then exists)
  // eos, eot (tokenizer.ggml.eot_token_id), and the end spellings <|im_end|>, <|endoftext|>,
  // <|end_of_text|>, <|eot_id|>, <|eom_id|>
  virtual bool is_end_of_generation(int32_t id) const = 0;
};

// Reads a HF tokenizer.json (vocab, merges, added tokens) and sets the GGUF tokenizer keys as
// llama.cpp's converter does (tokenizer.ggml.model="gpt2", pre="qwen2" or "llama-bpe" from the
// split regex, tokens padded to vocab_size, token_type, merges, bos/eos/padding ids,
// add_bos_token: tokenizer_config.json's, else the pre-tokenizer's default).
void import_hf_tokenizer(const std::string& tokenizer_json_path, int64_t vocab_size,
                         GGUFWriter& out);

}  // namespace minfer
