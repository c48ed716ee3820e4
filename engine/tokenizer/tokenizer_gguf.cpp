// Tokenizer::from_gguf: reads the tokenizer.ggml.* keys and builds the byte-level BPE tokenizer.
#include <limits>
#include <optional>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/bpe_tokenizer.h"

namespace minfer {
namespace {

int32_t optional_id(const GGUFFile& f, const std::string& key) {
  const GGUFValue* v = f.find(key);
  if (!v) return -1;
  int64_t id = v->as_int(f.path() + ": metadata key '" + key + "'");
  if (id < 0 || id > std::numeric_limits<int32_t>::max())
    fail(f.path(), ": metadata key '", key, "' = ", id, " is not a token id");
  return static_cast<int32_t>(id);
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GGUFFile& f) {
  std::string model = f.get_string("tokenizer.ggml.model");
  if (model != "gpt2")
    fail(f.path(), ": tokenizer.ggml.model is '", model, "'; only 'gpt2' (byte-level BPE) is supported");
  // The pre-tokenizer decides the split regex, normalization and BOS default.
  const GGUFValue* pre = f.find("tokenizer.ggml.pre");
  std::string pre_name = pre ? pre->as_string(f.path() + ": metadata key 'tokenizer.ggml.pre'") : "(absent)";
  const std::optional<PreTokenizer> known = pre_tokenizer_from_gguf_name(pre_name);
  if (!known)
    fail(f.path(), ": tokenizer.ggml.pre is '", pre_name, "'; the supported pre-tokenizers are ",
         supported_pre_tokenizers());

  TokenizerVocab v;
  v.source = f.path();
  v.pre = *known;
  const GGUFValue* add_bos = f.find("tokenizer.ggml.add_bos_token");
  v.add_bos = add_bos ? add_bos->as_bool(f.path() + ": metadata key 'tokenizer.ggml.add_bos_token'") : info(v.pre).add_bos;
  v.tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (f.find("tokenizer.ggml.token_type")) {
    std::vector<int64_t> types = f.get_int_array("tokenizer.ggml.token_type");
    v.types.reserve(types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] < 0 || types[i] > 6)
        fail(f.path(), ": tokenizer.ggml.token_type[", i, "] = ", types[i], " is not a known token type (0..6)");
      v.types.push_back(static_cast<int32_t>(types[i]));
    }
  }
  v.merges = f.get_string_array("tokenizer.ggml.merges");
  v.bos_id = optional_id(f, "tokenizer.ggml.bos_token_id");
  v.eos_id = optional_id(f, "tokenizer.ggml.eos_token_id");
  v.pad_id = optional_id(f, "tokenizer.ggml.padding_token_id");
  v.eot_id = optional_id(f, "tokenizer.ggml.eot_token_id");
  return make_bpe_tokenizer(std::move(v));
}

}  // namespace minfer
