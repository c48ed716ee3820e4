#include "model/architecture.h"

namespace minfer {
namespace {

constexpr ArchitectureTraits kQwen2{"qwen2", true, false, RopeMode::NeoX};
constexpr ArchitectureTraits kQwen3{"qwen3", false, true, RopeMode::NeoX};
constexpr ArchitectureTraits kLlama{"llama", false, false, RopeMode::Normal};

}  // namespace

const ArchitectureTraits& traits(Architecture a) {
  switch (a) {
    case Architecture::Qwen2: return kQwen2;
    case Architecture::Qwen3: return kQwen3;
    case Architecture::Llama: return kLlama;
  }
  return kQwen2;
}

const char* architecture_name(Architecture a) { return traits(a).name; }

std::optional<Architecture> architecture_from_name(std::string_view name) {
  for (Architecture a : {Architecture::Qwen2, Architecture::Qwen3, Architecture::Llama})
    if (name == traits(a).name) return a;
  return std::nullopt;
}

const char* supported_architectures() { return "qwen2, qwen3 or llama"; }

}  // namespace minfer
