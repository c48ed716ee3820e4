// One recorded run: the recorder that writes the trace, started with the run's meta (run_meta.h),
// the observer generate() is handed, and how the trace ends. Every program that records uses it:
// minfer (run_cli.cpp, MINFER_TRACE / --trace), minfer-bench (one trace per decode run) and
// minfer-viz's live runs (viz-server/live_runs.cpp, which tee its observer to the page).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

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
  // The same with the run's meta already built (run_meta, then the caller's mark: a live run's
  // `live_run`). opts must be enabled. Creates the trace's .partial at once (throws Error naming
  // it when it cannot).
  static std::unique_ptr<TraceSession> start(trace::RecorderOptions opts, nlohmann::json meta, const Tokenizer& tok);
  virtual ~TraceSession() = default;
  virtual Observer* observer() = 0;
  // Writes the timings (load_ms when the program measured the load), completes the file and
  // renames it into place; returns its path.
  virtual std::string finish(const GenerateResult& r, std::optional<double> load_ms) = 0;
  // A run whose trace is not kept (a live run that failed, or was cancelled before its first
  // step): stops the recorder and removes its .partial and journal. Without finish() or
  // discard() the .partial and journal stay, for minfer-trace recover.
  virtual void discard() = 0;
};

}  // namespace minfer
