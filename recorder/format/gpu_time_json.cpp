#include "format/gpu_time_json.h"

#include <algorithm>

#include "json_out.h"

namespace minfer::trace {
namespace {

void append_triple(std::string& o, const std::array<int, 3>& v) {
  o += '[';
  for (size_t i = 0; i < 3; ++i) {
    if (i) o += ',';
    append_int(o, v[i]);
  }
  o += ']';
}

void append_ms(std::string& o, const char* key, double v) {
  if (v < 0) return;
  o += ",\"";
  o += key;
  o += "\":";
  append_number(o, v);
}

}  // namespace

void append_step_gpu_fields(std::string& o, const StepGpuTime& t) {
  append_ms(o, "gpu_ms", t.gpu_ms);
  append_ms(o, "gpu_busy_ms", t.busy_ms);
  if (t.gpu_ms >= 0 && t.busy_ms >= 0) append_ms(o, "idle_ms", std::max(0.0, t.gpu_ms - t.busy_ms));
  append_ms(o, "event_ms", t.event_ms);
  append_ms(o, "host_ms", t.host_ms);
  if (!t.kernels.empty() || t.dropped > 0) {
    o += ",\"kernels_dropped\":";
    append_int(o, t.dropped);
  }
  if (!t.note.empty()) {
    o += ",\"kernels_note\":";
    append_string(o, t.note);
  }
}

void append_kernels(std::string& o, const std::vector<KernelRecord>& kernels) {
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelRecord& k = kernels[i];
    if (i) o += ',';
    o += "{\"name\":";
    append_string(o, k.name);
    o += ",\"node\":";
    append_int(o, k.node);
    if (k.node < 0) {
      o += ",\"unattributed\":";
      append_string(o, k.unattributed.empty() ? "unknown" : k.unattributed);
    }
    if (k.covers.size() > 1) {
      o += ",\"covers\":[";
      for (size_t j = 0; j < k.covers.size(); ++j) {
        if (j) o += ',';
        append_int(o, k.covers[j]);
      }
      o += ']';
    }
    if (k.graph_node >= 0) {
      o += ",\"graph_node\":";
      append_int(o, k.graph_node);
    }
    o += ",\"start_ns\":";
    append_int(o, k.start_ns);
    o += ",\"duration_ns\":";
    append_int(o, k.duration_ns);
    o += ",\"grid\":";
    append_triple(o, k.grid);
    o += ",\"block\":";
    append_triple(o, k.block);
    o += ",\"registers\":";
    append_int(o, k.registers);
    o += ",\"shared_bytes\":";
    append_int(o, k.shared_bytes);
    o += '}';
  }
}

std::vector<NodeGpuTime> node_gpu_times(const std::vector<KernelRecord>& kernels, size_t n_nodes) {
  std::vector<NodeGpuTime> t(n_nodes);
  for (const KernelRecord& k : kernels) {
    if (k.node < 0 || static_cast<size_t>(k.node) >= n_nodes) continue;
    NodeGpuTime& n = t[static_cast<size_t>(k.node)];
    const double start = static_cast<double>(k.start_ns) * 1e-3;
    n.us = (n.us < 0 ? 0 : n.us) + static_cast<double>(k.duration_ns) * 1e-3;
    n.start_us = n.start_us < 0 ? start : std::min(n.start_us, start);
  }
  return t;
}

void append_node_gpu_fields(std::string& o, const NodeGpuTime& t) {
  if (t.us < 0) return;
  o += ",\"gpu_us\":";
  append_number(o, t.us);
  o += ",\"gpu_start_us\":";
  append_number(o, t.start_us);
}

}  // namespace minfer::trace
