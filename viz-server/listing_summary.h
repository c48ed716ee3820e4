// The one-line description of a trace file shown in the trace list.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "format/trace_input.h"

namespace minfer::viz {

// The newest trace version the server reads (it reads 1 up to this one).
inline constexpr int kHighestTraceVersion = 3;

struct TraceSummary {
  int version = 0;
  std::string model;         // meta.model.file (v2); "" when the trace does not say
  std::string model_name;    // meta.model.name
  std::string architecture;  // meta.model.architecture, the model family ("qwen2", "qwen3", "llama")
  std::string model_sha256;  // meta.model.sha256: two traces compare only when it matches
  std::string compare_path;  // v3 paired trace: meta.compare.path (the reference run's path)
  std::string backend, matmul_path, device, recorded_at, prompt;
  int64_t steps = 0;         // prefill + decode steps
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  bool complete = false;
};

// Summarizes minfer-trace JSON text (version 2, or the upstream version 1 layout). The big
// parts (graphs, node records, kernels, top-k lists) are skipped while parsing, so a large
// trace costs its parse time but not a DOM of its size. Throws minfer::Error naming `what`
// and the problem (not JSON, too deep, not a minfer-trace, unsupported version, wrong field
// types).
TraceSummary summarize_trace(std::string_view json_text, const std::string& what);

// The same for a trace file, streamed through the capped reader: a .json.gz is inflated a
// buffer at a time, never whole, and no further than options.max_bytes. Errors name
// options.label (the file name the API shows), never the server's path.
TraceSummary summarize_trace_file(const std::string& path, const trace::ReadOptions& options);

// The list entry fields: model, backend, matmul_path, steps, tokens, recorded_at, complete...
nlohmann::json summary_to_json(const TraceSummary& s);

}  // namespace minfer::viz
