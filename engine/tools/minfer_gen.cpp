// minfer-gen: writes a Qwen2-architecture GGUF with deterministic random weights and the real
// Qwen vocabulary.  minfer-gen --preset tiny|qwen2.5-0.5b|qwen2.5-7b --weights f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|q4_k_m
//                              [--seed S] [--threads N] [--tokenizer tokenizer.json] -o OUT.gguf
// The bytes depend on preset, weights and seed only, never on the thread count.
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "model/generator.h"

namespace {
// Digits only: std::stoull would take "-1" as 2^64-1 and say only "stoull" for "abc".
uint64_t parse_seed(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || errno == ERANGE)
    minfer::fail("--seed: expected an integer from 0 to 18446744073709551615, got '", v, "'");
  return x;
}

int parse_threads(const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || x < 1 || x > 1024)
    minfer::fail("--threads: expected an integer from 1 to 1024, got '", v, "'");
  return static_cast<int>(x);
}

const char* kUsage =
    "usage: minfer-gen --preset tiny|qwen2.5-0.5b|qwen2.5-7b --weights f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|q4_k_m "
    "[--seed S] [--threads N] [--tokenizer tokenizer.json] -o OUT.gguf\n"
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
      else if (a == "--seed") spec.seed = parse_seed(value());
      else if (a == "--threads") spec.threads = parse_threads(value());
      else if (a == "--tokenizer") spec.tokenizer_json = value();
      else if (a == "-o" || a == "--output") out = value();
      else if (a == "-h" || a == "--help") { std::fputs(kUsage, stdout); return 0; }
      else minfer::fail("unknown argument '", a, "'");
    }
    if (out.empty()) minfer::fail("missing -o OUT.gguf");
    minfer::preset_hparams(spec.preset);  // validates the preset before any work
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
