// Connects the CLI to the recorder: starts a trace when MINFER_TRACE / --trace asks for one.
#pragma once
#include <memory>
#include <string>

#include "cli/cli_args.h"
#include "cli/run_meta.h"
#include "core/environment.h"
#include "exec/backend.h"
#include "exec/generate.h"
#include "model/model.h"
#include "recorder_options.h"
#include "tokenizer/tokenizer.h"

namespace minfer {

class TraceSession {
 public:
  // nullptr when no trace was requested (then nothing is recorded and nothing costs). env: the
  // program's environment (MINFER_TRACE*, with o.trace_args: trace::RecorderOptions).
  static std::unique_ptr<TraceSession> maybe_start(const CliOptions& o, const Environment& env, const Model& m,
                                                   const Backend& b, const Tokenizer& tok,
                                                   const TraceExtras& extras);
  // The same with the recorder's options already read (minfer-bench: one trace per run).
  static std::unique_ptr<TraceSession> start(trace::RecorderOptions opts, const CliOptions& o, const Model& m,
                                             const Backend& b, const Tokenizer& tok, const TraceExtras& extras);
  virtual ~TraceSession() = default;
  virtual Observer* observer() = 0;
  // Writes the timings, completes the file and renames it into place; returns its path.
  virtual std::string finish(const GenerateResult& r, double load_ms) = 0;
};

// JSON of a graph with the fields of --dump-graph (shared with the trace's graphs).
std::string graph_json_text(const Graph& g);

}  // namespace minfer
