// Qwen2 hyper-parameters as read from GGUF metadata.
#pragma once
#include <cstdint>
#include <string>

namespace minfer {

class GGUFFile;

struct HParams {
  std::string architecture = "qwen2";
  int64_t n_vocab = 0, n_ctx = 0, n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0,
          head_dim = 0, n_ff = 0;
  double rope_base = 10000.0, rms_eps = 1e-6;
  bool tied_embeddings = true;

  int64_t n_embd_kv() const { return head_dim * n_head_kv; }
  // Reads and checks the qwen2.* keys; throws Error naming the file and key.
  static HParams from_gguf(const GGUFFile& f);
};

}  // namespace minfer
