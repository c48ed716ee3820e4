// A loaded model (qwen2, qwen3 or llama): the mapped GGUF, its hyper-parameters and checked views of every weight.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/weight_type.h"
#include "gguf/gguf_reader.h"
#include "model/hparams.h"

namespace minfer {

class ThreadPool;

// A weight as stored in the file: row-major [rows][cols] (GGUF ne = {cols, rows}).
struct WeightView {
  std::string name;
  WeightType type = WeightType::F32;
  int64_t rows = 0, cols = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;

  bool present() const { return !name.empty(); }  // optional weights stay empty when absent
};

struct LayerWeights {
  WeightView attn_norm, wq, bq, wk, bk, wv, bv, wo, ffn_norm, w_gate, w_up, w_down;
  WeightView q_norm, k_norm;  // qwen3: per-head RMSNorm weights {head_dim}
};

struct Model {
  std::unique_ptr<GGUFFile> file;
  HParams hp;
  WeightView token_embd, output_norm, output;  // output == token_embd when tied
  WeightView rope_freqs;  // llama 3.1+: head_dim/2 divisors of the RoPE frequencies, when present
  std::vector<LayerWeights> layers;

  // Maps the file and checks every tensor's presence, shape and type, and that no weight holds a
  // NaN or Inf (matrices: their block scales, or every value of a float one; the scan runs on
  // `pool` when given, else on the calling thread). Throws Error.
  static std::unique_ptr<Model> load(const std::string& path, ThreadPool* pool = nullptr);
  const WeightView& weight(const std::string& name) const;  // by tensor name
  // "Q8_0" or "mixed(Q5_0,Q8_0)" per tensor class (attn_q, ffn_down, ...).
  std::vector<std::pair<std::string, std::string>> weight_type_summary() const;
};

}  // namespace minfer
