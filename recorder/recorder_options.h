// What to record, from the environment (MINFER_TRACE*, see usage()) and --trace* flags; flags
// override the environment. The CLI hands its argument list over and gets back the rest.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/observer.h"

namespace minfer::trace {

struct RecorderOptions {
  std::string path;           // "" = no trace (nothing is created, no observer)
  int grid_rows = 32;         // token rows kept in the value grid (0: no grid)
  int grid_cols = 64;         // columns kept, evenly strided
  int hist_bins = 32;         // 0: no histogram
  int top_k = 20;             // logits entries kept per step
  std::string nodes;          // comma-separated glob patterns, "" = all nodes
  std::string steps = "all";  // "all", "none", "prefill", "decode", "0-3,10", "5-"
  bool stats_only = false;    // no grids, no histograms
  int outliers = 8;           // largest-|x| elements kept per node record (0: none)
  // Steps whose GPU kernels are recorded one by one (CUPTI: ~1.2 ms more per 0.5b decode step);
  // every other recorded step gets its GPU time from a pair of events. Same syntax as steps. By
  // default the prompt's prefill and the first decode step: every later decode step replays the
  // same CUDA graph, so the first one's kernels stand for theirs.
  std::string kernel_steps = "0-1";
  // Each step safe (journaled, or written) before the next is launched, and no chained decoding:
  // a kill -9 loses at most the one step in flight, at the cost of speed on a GPU.
  bool step_by_step = false;

  bool enabled() const { return !path.empty(); }
  SummarySpec spec() const;
  nlohmann::json to_json() const;  // meta.options in the trace

  // Reads MINFER_TRACE* from env (the program's environment, core/environment.h: a main
  // passes process_environment()), then removes every --trace* flag (and its value) from args,
  // leaving the others in order. Throws Error on unknown --trace-* flags and bad values, naming
  // the variable or flag.
  static RecorderOptions from_env_and_args(const std::map<std::string, std::string>& env,
                                           std::vector<std::string>& args);
  static bool is_trace_flag(std::string_view arg);  // "--trace", "--trace-*", "--trace=..."
  // A trace flag that takes no separate value (--trace-stats-only, --trace-step-by-step; a
  // value only as --flag=VALUE).
  static bool is_trace_switch(std::string_view arg);
  static const char* usage();                       // help text for the CLI
};

}  // namespace minfer::trace
