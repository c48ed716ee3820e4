// Command-line options of minfer-viz.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/environment.h"
#include "request_limits.h"

namespace minfer::viz {

struct VizArgs {
  std::string host = "127.0.0.1";           // loopback unless the user asks otherwise
  int port = 8080;                          // 0: let the OS pick a free port
  std::vector<std::string> traces_dirs;     // searched in order; the first holding a name wins
  std::vector<std::string> models;          // --model: live runs with these GGUF files
  std::string web_dir;                      // built web app (index.html); "" = API only
  uint64_t max_trace_bytes = 0;             // 0 given: env's MINFER_TRACE_MAX_BYTES or the default
  uint64_t max_steps = kDefaultMaxSteps;    // steps of one trace sliced or compared
  bool help = false;
};

// Parses argv[1..]; throws minfer::Error naming the flag and the problem. Directories are
// checked to exist. Without --traces, ./traces is used when it exists; without --web,
// ./web/dist when it exists.
// env: the program's environment (core/environment.h; main passes process_environment()).
VizArgs parse_viz_args(const std::vector<std::string>& args, const Environment& env = {});

std::string viz_usage();

}  // namespace minfer::viz
