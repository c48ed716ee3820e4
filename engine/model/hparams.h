// Model hyper-parameters as read from GGUF metadata (<architecture>.* keys).
#pragma once
#include <cstdint>
#include <string>

#include "model/architecture.h"

namespace minfer {

class GGUFFile;

struct HParams {
  Architecture arch = Architecture::Qwen2;
  int64_t n_vocab = 0, n_ctx = 0, n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0,
          head_dim = 0, n_ff = 0;
  double rope_base = 10000.0, rms_eps = 1e-6;
  bool tied_embeddings = true;

  int64_t n_embd_kv() const { return head_dim * n_head_kv; }
  // The attention width: qwen3's key_length can make it differ from n_embd.
  int64_t n_embd_q() const { return head_dim * n_head; }
  // Reads and checks the <architecture>.* keys; throws Error naming the file and key.
  static HParams from_gguf(const GGUFFile& f);
};

}  // namespace minfer
