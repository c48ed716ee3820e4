// --tokens-from A.json: the tokens a recorded trace fed, to replay them (teacher forcing) so two
// traces recorded separately (other path, backend, commit, machine) stay aligned step by step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minfer {

struct ReplayTokens {
  std::string file;                // the trace's file name (meta.tokens_from.file)
  int64_t steps = 0;               // its step count
  std::string prompt_text;         // its meta.prompt
  std::vector<int32_t> prompt;     // the prefill's input tokens
  // The generated tokens in order: each decode step's input, then the last step's pick.
  std::vector<int32_t> generated;
};

// Reads a trace (.json, .json.gz, v2 or v3; validated; at most max_trace_bytes of JSON text,
// trace::default_max_trace_bytes). Errors name the file and the problem: not a trace, recorded
// with another model (meta.model.sha256 differs from model_sha256), no steps, a token id outside
// the vocabulary.
ReplayTokens load_replay_tokens(const std::string& path, const std::string& model_sha256, int64_t n_vocab,
                                uint64_t max_trace_bytes);

}  // namespace minfer
