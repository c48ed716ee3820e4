#include "model/hparams.h"

#include <cmath>
#include <optional>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace minfer {

HParams HParams::from_gguf(const GGUFFile& f) {
  HParams h;
  const std::string arch = f.get_string("general.architecture");
  const std::optional<Architecture> known = architecture_from_name(arch);
  if (!known)
    fail(f.path(), ": unsupported architecture '", arch, "' (general.architecture); minfer supports ",
         supported_architectures());
  h.arch = *known;
  const std::string a = arch + ".";
  h.n_ctx = f.get_int(a + "context_length");
  h.n_embd = f.get_int(a + "embedding_length");
  h.n_layer = f.get_int(a + "block_count");
  h.n_ff = f.get_int(a + "feed_forward_length");
  h.n_head = f.get_int(a + "attention.head_count");
  h.n_head_kv = f.find(a + "attention.head_count_kv") ? f.get_int(a + "attention.head_count_kv") : h.n_head;
  if (f.find(a + "rope.freq_base")) h.rope_base = f.get_float(a + "rope.freq_base");
  if (f.find(a + "attention.layer_norm_rms_epsilon"))
    h.rms_eps = f.get_float(a + "attention.layer_norm_rms_epsilon");
  auto check = [&](int64_t v, const char* key, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) fail(f.path(), ": metadata ", a, key, " = ", v, " is out of range [", lo, ", ", hi, "]");
  };
  check(h.n_ctx, "context_length", 1, 1 << 22);
  check(h.n_embd, "embedding_length", 1, 1 << 16);
  check(h.n_layer, "block_count", 1, 1024);
  check(h.n_ff, "feed_forward_length", 1, 1 << 18);
  check(h.n_head, "attention.head_count", 1, 1024);
  check(h.n_head_kv, "attention.head_count_kv", 1, h.n_head);
  if (h.n_head % h.n_head_kv != 0)
    fail(f.path(), ": head_count ", h.n_head, " is not a multiple of head_count_kv ", h.n_head_kv);
  if (f.find(a + "attention.key_length")) {
    // qwen3 states its head width: n_head * head_dim may differ from n_embd.
    h.head_dim = f.get_int(a + "attention.key_length");
    check(h.head_dim, "attention.key_length", 2, 1024);
    if (f.find(a + "attention.value_length")) {
      const int64_t vl = f.get_int(a + "attention.value_length");
      if (vl != h.head_dim)
        fail(f.path(), ": metadata ", a, "attention.value_length = ", vl, " differs from attention.key_length = ",
             h.head_dim, " (unsupported)");
    }
  } else {
    if (h.n_embd % h.n_head != 0)
      fail(f.path(), ": embedding_length ", h.n_embd, " is not a multiple of head_count ", h.n_head);
    h.head_dim = h.n_embd / h.n_head;
  }
  if (f.find(a + "rope.dimension_count")) {  // llama writes it; a partial rotary width is another model
    const int64_t rd = f.get_int(a + "rope.dimension_count");
    if (rd != h.head_dim)
      fail(f.path(), ": metadata ", a, "rope.dimension_count = ", rd, " differs from the head dim ", h.head_dim,
           " (partial RoPE is unsupported)");
  }
  if (h.head_dim % 2 != 0) fail(f.path(), ": head dim ", h.head_dim, " must be even for rope");
  // Finite too: an infinite epsilon or base loads and then turns every activation into 0 or NaN.
  if (!(h.rope_base > 0) || !std::isfinite(h.rope_base))
    fail(f.path(), ": metadata ", a, "rope.freq_base = ", h.rope_base, " must be positive and finite");
  if (!(h.rms_eps > 0) || !std::isfinite(h.rms_eps))
    fail(f.path(), ": metadata ", a, "attention.layer_norm_rms_epsilon = ", h.rms_eps, " must be positive and finite");
  const GGUFTensorInfo& emb = f.tensor("token_embd.weight");
  if (emb.ne.size() != 2 || emb.ne[0] != h.n_embd)
    fail(f.path(), ": tensor 'token_embd.weight' must be {", h.n_embd, ", n_vocab}");
  h.n_vocab = emb.ne[1];
  // A token the tokenizer can produce must have an embedding row (ids past it would gather
  // outside the matrix).
  if (const GGUFValue* tokens = f.find("tokenizer.ggml.tokens");
      tokens && static_cast<int64_t>(tokens->size()) > h.n_vocab)
    fail(f.path(), ": tokenizer.ggml.tokens has ", tokens->size(), " tokens but token_embd.weight only ", h.n_vocab,
         " rows");
  h.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  return h;
}

}  // namespace minfer
