// Everything the request handlers share: the trace index, the web root, the body cache.
#pragma once
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "body_cache.h"
#include "core/engine_options.h"
#include "request_limits.h"
#include "trace_index.h"

namespace minfer::viz {

struct VizContext {
  VizContext(const std::vector<std::string>& traces_dirs, uint64_t max_trace_bytes)
      : traces(traces_dirs, max_trace_bytes) {}

  TraceIndex traces;
  std::optional<std::filesystem::path> web_root;  // canonical; nullopt = API only
  BodyCache bodies;                               // re-encoded traces and comparison results
  uint64_t max_steps = kDefaultMaxSteps;          // --max-steps (request_limits.h)
  // How long /api/compare waits for its result before it answers 200 and streams it
  // (api_routes.cpp): errors found sooner keep their status (422, 413).
  std::chrono::milliseconds compare_answer_wait{1000};
  std::atomic<uint64_t> compares_cancelled{0};   // comparisons stopped because their client left
  std::vector<std::string> models;                // --model files: live runs (live_runs.h)
  EngineOptions engine;                           // the live runs' engine options (VizConfig)
  std::string digest_cache_dir;                   // where their model digests are cached (VizConfig)
  std::shared_ptr<class LiveRuns> live;           // null without models
};

}  // namespace minfer::viz
