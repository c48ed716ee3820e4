// minfer-gen: writes a qwen2, qwen3 or llama GGUF with deterministic random weights and the
// family's real vocabulary.  minfer-gen --preset NAME --weights f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|q4_k_m
//                              [--seed S] [--threads N] [--tokenizer tokenizer.json] -o OUT.gguf
// The bytes depend on preset, weights and seed only, never on the thread count.
#include <chrono>
#include <cstdio>
#include <limits>
#include <string>

#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/thread_pool.h"
#include "model/generator.h"

namespace {
const char* kUsage =
    "usage: minfer-gen --preset PRESET --weights f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|q4_k_m "
    "[--seed S] [--threads N] [--tokenizer tokenizer.json] -o OUT.gguf\n"
    "  PRESET: tiny, qwen2.5-0.5b, qwen2.5-7b (qwen2), qwen3-tiny, qwen3-0.6b (qwen3), llama-tiny, llama-3.2-1b,\n"
    "          llama-3.1-8b (llama); the Qwen vocabulary for qwen2/qwen3, Llama 3's for llama\n"
    "  --threads N: worker threads (default: MINFER_THREADS or every core); the output is the same for any N\n";
}

int main(int argc, char** argv) {
  try {
    minfer::GenSpec spec;
    std::string out;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) minfer::fail(a, " needs a value");
        return argv[++i];
      };
      if (a == "--preset") spec.preset = value();
      else if (a == "--weights") spec.weights = minfer::gen_weights_from_name(value());
      else if (a == "--seed") spec.seed = minfer::parse_uint(value(), a, 0, std::numeric_limits<uint64_t>::max());
      else if (a == "--threads") spec.threads = static_cast<int>(minfer::parse_int(value(), a, 1, minfer::kMaxThreads));
      else if (a == "--tokenizer") spec.tokenizer_json = value();
      else if (a == "-o" || a == "--output") out = value();
      else if (a == "-h" || a == "--help") { std::fputs(kUsage, stdout); return 0; }
      else minfer::fail("unknown argument '", a, "'");
    }
    if (out.empty()) minfer::fail("missing -o OUT.gguf");
    minfer::preset_hparams(spec.preset);  // validates the preset before any work
    if (spec.threads == 0)  // else the flag wins: the variable is not read
      minfer::ThreadPool::set_global_threads(minfer::EngineOptions::from_env(minfer::process_environment()).threads);
    auto t0 = std::chrono::steady_clock::now();
    minfer::generate_model(spec, out);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "minfer-gen: wrote %s (%s, seed %llu) in %.1f s\n", out.c_str(),
                 spec.preset.c_str(), static_cast<unsigned long long>(spec.seed), s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer-gen: error: %s\n%s", e.what(), kUsage);
    return 1;
  }
}
