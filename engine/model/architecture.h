// The model families minfer runs (GGUF general.architecture) and what sets their graphs apart.
#pragma once
#include <optional>
#include <string_view>

namespace minfer {

enum class Architecture { Qwen2, Qwen3, Llama };

// How RoPE pairs the values of a head: NeoX rotates element i with i + head_dim/2; ggml's
// "normal" mode (Llama) rotates adjacent pairs (2i, 2i+1).
enum class RopeMode { NeoX, Normal };

struct ArchitectureTraits {
  const char* name;  // general.architecture, and the prefix of the family's metadata keys
  bool qkv_bias;     // attn_q/k/v carry biases (qwen2)
  bool qk_norm;      // per-head RMSNorm of Q and K before RoPE (qwen3: attn_q_norm, attn_k_norm)
  RopeMode rope;
};

const ArchitectureTraits& traits(Architecture a);
const char* architecture_name(Architecture a);
std::optional<Architecture> architecture_from_name(std::string_view name);
// "qwen2, qwen3 or llama", for error messages.
const char* supported_architectures();

}  // namespace minfer
