// The trace's `meta` of a run (docs/trace-format.md, "meta"): the one builder of it, used by every
// program that records (minfer and minfer-bench in TraceSession::start, minfer-viz's live runs
// before they start their TraceSession, cli/trace_session.h), so
// two traces of the same model and settings carry the same fields whoever recorded them. The
// recorder adds `options`, `recorded_at`, `minfer_version` and `commit` (recorder.h); a live run
// adds its mark, `live_run`.
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/tokens_from.h"
#include "exec/backend.h"
#include "model/model.h"
#include "sampler/sampler.h"

namespace minfer {

// What a run adds to the trace's meta beyond the model and the backend.
struct TraceExtras {
  std::string prompt;                    // the prompt text as run (meta.prompt)
  const Backend* reference = nullptr;    // paired run: meta.compare
  const ReplayTokens* replay = nullptr;  // --tokens-from: meta.tokens_from
  // The backend's streaming-read probe (read_bandwidth_gbs(Backend&), cli/backend_choice.h),
  // called once when a CUDA run is traced: meta.device_limits, the roofline's bandwidth roof.
  // Empty: not recorded.
  std::function<double()> read_bandwidth_gbs = nullptr;
};

// The run's settings the meta records.
struct RunSettings {
  std::string model_path;    // meta.model.file is its file name; meta.model.sha256 hashes it
  SamplerOptions sampler;    // meta.sampler
  int n_predict = 0;         // meta.sampler.n_predict
  std::string kernel_steps;  // the recorder's kernel_steps (RecorderOptions): meta.cupti.steps on cuda
  // Whether the recording observer hands the backend what it records (Observer::recording): node
  // summaries computed where the backend computes them, CUPTI kernel records and GPU times. The
  // CLI's recorder does; a live run's observer does not (its summaries come from host copies and
  // it records no kernels), and its meta says so.
  bool backend_records = true;
  // Where meta.model.sha256 is cached (trace::digest_cache_dir of the program's environment);
  // "": not cached.
  std::string digest_cache_dir = "";
};

// Every fact is read from the model and the backend themselves (backend-specific ones through
// Backend's own answers: step_graphs, summaries_computed_on, kernel_records_unavailable) or given
// as data by the caller (RunSettings, TraceExtras), so a CUDA run's meta says cuda_graph: true
// whichever program recorded it.
nlohmann::json run_meta(const Model& m, const Backend& b, const RunSettings& s, const TraceExtras& x);

}  // namespace minfer
