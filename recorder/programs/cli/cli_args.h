// Command-line parsing for `minfer`: generation (MODEL PROMPT ...) and `tokenize`.
#pragma once
#include <string>
#include <vector>

#include "sampler/sampler.h"

namespace minfer {

struct CliOptions {
  enum class Mode { Generate, Tokenize, Help, Version } mode = Mode::Generate;
  std::string model, prompt, prompt_file;
  int n_predict = 32;
  SamplerOptions sampler;
  std::string backend = "auto";  // auto | cpu | cuda
  std::string dump_graph;
  int threads = 0;
  bool stats_only_output = false;      // --quiet: no streamed text
  std::vector<std::string> trace_args;  // --trace* flags, handed to the recorder
  std::string compare_path;   // --compare-path mmq|f32|f16: a paired trace against that path
  std::string tokens_from;    // --tokens-from A.json: replay that trace's tokens
  // From the environment (run_cli reads it once): where the model's digest (meta.model.sha256,
  // --tokens-from's check) is cached, trace::digest_cache_dir; "" = not cached.
  std::string digest_cache_dir;
};

// Throws Error with a usage hint on bad arguments.
CliOptions parse_cli(int argc, char** argv);
const char* cli_usage();

}  // namespace minfer
