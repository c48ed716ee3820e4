// Everything the request handlers share: the trace index, the web root, the body cache.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "body_cache.h"
#include "trace_index.h"

namespace minfer::viz {

struct VizContext {
  explicit VizContext(const std::vector<std::string>& traces_dirs) : traces(traces_dirs) {}

  TraceIndex traces;
  std::optional<std::filesystem::path> web_root;  // canonical; nullopt = API only
  BodyCache bodies;                               // re-encoded traces and comparison results
};

}  // namespace minfer::viz
