// Per-step slices of a version-2 trace, so the page can paint before a large trace (7B × 100
// steps) has arrived whole:
//   GET /api/slices/NAME/index     the trace with every step's "nodes" and "kernels" set to
//                                  null (meta, graphs, per-step tokens/logits/times stay)
//   GET /api/slices/NAME/steps/K   {"nodes": […], "kernels": […]} of step K, the file's bytes
// The file is scanned once per version (size, mtime) without building a JSON tree; bodies come
// from the shared BodyCache. A version-1 trace answers 422 with "version": 1 (the page then loads
// it whole). Every 404 of these routes starts "slices:", which tells it from the catch-all 404 of a
// server without them (the page reads the file whole only then; any other refusal it shows).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace httplib { class Server; }

namespace minfer::viz {

struct VizContext;

// Byte ranges of a v2 trace's steps, found by a string-aware bracket scan.
struct StepRanges {
  std::pair<size_t, size_t> nodes{0, 0};    // [begin, end) of the value; empty = absent
  std::pair<size_t, size_t> kernels{0, 0};
};
struct TraceLayout {
  int version = 0;
  std::vector<StepRanges> steps;
};

// Throws minfer::Error naming `what` when the text is not a JSON object with a steps array, and
// LimitExceeded (request_limits.h) at its step number max_steps + 1, before recording it.
TraceLayout scan_trace_layout(std::string_view text, const std::string& what, uint64_t max_steps);
std::string slice_index(std::string_view text, const TraceLayout& layout);
std::string slice_step(std::string_view text, const TraceLayout& layout, size_t step);

struct TraceEntry;
// Throws LimitExceeded when `file` has more than ctx.max_steps steps (/api/compare asks before
// it loads two traces whole). The scan is the slices' own, cached.
void check_step_limit(const TraceEntry& file, VizContext& ctx);

void register_slice_routes(httplib::Server& server, VizContext& ctx);

}  // namespace minfer::viz
