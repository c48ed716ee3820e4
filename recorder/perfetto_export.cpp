#include "perfetto_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "format/trace_keys.h"

namespace minfer::trace {

using nlohmann::json;

namespace {
constexpr int kPid = 1;
// Track ids ("tid"s), also their display order. Lanes after the first of a GPU track get ids
// from kLaneTidBase up (see Lanes).
constexpr int kStepTid = 1, kNodeTid = 2, kGpuStepTid = 3, kGpuNodeTid = 4, kOverlapTid = 5, kUnattributedTid = 6;
constexpr int kLaneTidBase = 100;

json meta_event(const char* what, int tid, const json& args) {
  json e = {{"ph", "M"}, {"pid", kPid}, {"name", what}, {"args", args}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

// A complete ("X") event and where it sorts: by start, then longest first, so that a parent
// comes before the children it contains whatever the reader's tie rule (file order or duration).
struct Slice {
  double ts_us, dur_us;
  json event;
};

Slice slice(int tid, const std::string& name, const std::string& cat, double ts_us, double dur_us, json args) {
  return {ts_us, dur_us,
          {{"ph", "X"}, {"pid", kPid}, {"tid", tid}, {"name", name}, {"cat", cat}, {"ts", ts_us}, {"dur", dur_us},
           {"args", std::move(args)}}};
}

// Times are written as whole nanoseconds (ns / 1000 = µs), start and end each rounded once, so
// a kernel's slice lies inside its node's slice exactly and steps laid end to end touch without
// overlapping: rounding a start and a duration on their own can push an end past the next start.
double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// A trace time as whole nanoseconds, clamped to +-1e14 ns (~28 hours; NaN -> 0): a damaged
// trace's huge value cannot overflow the integer sums below.
int64_t to_ns(double v) {
  constexpr double kMaxNs = 1e14;
  if (std::isnan(v)) return 0;
  return std::llround(std::clamp(v, -kMaxNs, kMaxNs));
}

Slice host_slice(int tid, const std::string& name, const std::string& cat, double ts_us, double dur_us, json args) {
  const int64_t a = to_ns(ts_us * 1e3), b = to_ns((ts_us + dur_us) * 1e3);
  return slice(tid, name, cat, us(a), us(b - a), std::move(args));
}

// Slices on one Chrome-trace thread must nest or be disjoint. A GPU track whose intervals can
// overlap (kernels of two nodes interleaved, concurrent kernels) is split into lanes: an
// interval goes to the first lane whose last interval ended before it starts.
class Lanes {
 public:
  Lanes(int first_tid, std::string name) : first_tid_(first_tid), name_(std::move(name)) {}
  int place(int64_t start_ns, int64_t end_ns) {
    size_t i = 0;
    while (i < ends_.size() && ends_[i] > start_ns) ++i;
    if (i == ends_.size()) ends_.push_back(end_ns);
    ends_[i] = std::max(ends_[i], end_ns);
    return tid(i);
  }
  void name_tracks(json& ev, int sort_base) const {
    for (size_t i = 0; i < ends_.size(); ++i) {
      const std::string n = i == 0 ? name_ : name_ + " (overlapping, lane " + std::to_string(i + 1) + ")";
      ev.push_back(meta_event("thread_name", tid(i), {{"name", n}}));
      ev.push_back(meta_event("thread_sort_index", tid(i), {{"sort_index", sort_base + static_cast<int>(i)}}));
    }
  }

 private:
  int tid(size_t lane) const {
    return lane == 0 ? first_tid_ : kLaneTidBase + first_tid_ * 1000 + static_cast<int>(lane);
  }
  int first_tid_;
  std::string name_;
  std::vector<int64_t> ends_;  // per lane: the latest end placed on it
};

// The GPU tracks, each with its lanes.
struct GpuTracks {
  Lanes steps{kGpuStepTid, "GPU: steps"};
  Lanes nodes{kGpuNodeTid, "GPU: nodes > kernels"};
  // A kernel that starts before the previous kernel of its node ended (real H200 records show
  // overlaps of tens of ns, e.g. an argmax launched while the logits GEMV drains) cannot nest in
  // the node's slice next to that kernel: it goes here, its node named in args.
  Lanes overlapping{kOverlapTid, "GPU: kernels overlapping their node's previous kernel"};
  Lanes unattributed{kUnattributedTid, "GPU: unattributed kernels"};
};

struct GpuKernel {
  const json* rec;
  int64_t start_ns, end_ns;  // on the trace clock (step start + offset)
};

json kernel_args(const json& k, const json& step) {
  json a = {{"node", k["node"]}, {"grid", k["grid"]}, {"block", k["block"]}, {"registers", k["registers"]},
            {"shared_bytes", k["shared_bytes"]}, {"duration_ns", k["duration_ns"]}, {"step", step[kstep::kIndex]}};
  for (const char* f : {"graph_node", "unattributed", "covers"})
    if (k.contains(f)) a[f] = k[f];
  return a;
}

// The step's GPU figures (trace v3, CUDA) as they were recorded, for the step slices' args.
json step_gpu_args(const json& s) {
  json a = json::object();
  for (const char* f : {"gpu_ms", "gpu_busy_ms", "idle_ms", "event_ms", "host_ms", "kernels_dropped", "kernels_note"})
    if (s.contains(f)) a[f] = s[f];
  return a;
}

std::string step_label(const json& s) {
  return s[kstep::kPhase] == keys::kPrefill ? std::string("prefill") : "decode " + std::to_string(s[kstep::kIndex].get<int>());
}

// The GPU side of one step: a step slice over its kernels, one slice per node spanning that
// node's kernels with the kernels nested under it, and unattributed kernels on their own track.
void gpu_step(const json& s, double step_us, const json* nodes, GpuTracks& tracks, std::vector<Slice>& out) {
  const int64_t base_ns = to_ns(step_us * 1e3);
  std::map<int, std::vector<GpuKernel>> by_node;  // ordered by node id: a stable output
  std::vector<GpuKernel> loose;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& k : s[kstep::kKernels]) {
    const int64_t start = base_ns + to_ns(k["start_ns"].get<double>());
    const GpuKernel g{&k, start, start + to_ns(k["duration_ns"].get<double>())};
    first = std::min(first, g.start_ns);
    last = std::max(last, g.end_ns);
    const int node = k["node"].get<int>();
    (node >= 0 ? by_node[node] : loose).push_back(g);
  }
  if (first > last) return;  // no kernels
  json args = step_gpu_args(s);
  args["step"] = s[kstep::kIndex];
  args["kernels"] = s[kstep::kKernels].size();
  out.push_back(slice(tracks.steps.place(first, last), step_label(s) + " (GPU)", "step", us(first), us(last - first), args));

  std::map<int, const json*> records;
  for (const auto& r : s[kstep::kNodes]) records[r[knode::kId].get<int>()] = &r;
  // Nodes in order of their first kernel, so lanes fill left to right.
  std::vector<std::pair<int, std::vector<GpuKernel>*>> order;
  for (auto& [id, ks] : by_node) order.emplace_back(id, &ks);
  auto span = [](const std::vector<GpuKernel>& ks) {
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (const auto& k : ks) a = std::min(a, k.start_ns), b = std::max(b, k.end_ns);
    return std::pair{a, b};
  };
  std::stable_sort(order.begin(), order.end(), [&](auto& x, auto& y) { return span(*x.second).first < span(*y.second).first; });
  for (auto& [id, ks] : order) {
    const auto [a, b] = span(*ks);
    const int tid = tracks.nodes.place(a, b);
    std::string name = "node " + std::to_string(id), op;
    if (nodes && id < static_cast<int>(nodes->size())) {
      name = (*nodes)[id]["name"].get<std::string>();
      op = (*nodes)[id]["op"].get<std::string>();
    }
    double busy_ns = 0;  // in double: a damaged trace may hold many huge kernels
    for (const auto& k : *ks) busy_ns += static_cast<double>(k.end_ns - k.start_ns);
    json na = {{"node", id}, {"op", op}, {"step", s[kstep::kIndex]}, {"kernels", ks->size()}, {"kernel_us", busy_ns / 1e3}};
    if (auto r = records.find(id); r != records.end())
      for (const char* f : {"gpu_us", "gpu_start_us"})
        if (r->second->contains(f)) na[f] = (*r->second)[f];
    out.push_back(slice(tid, name, op.empty() ? "node" : op, us(a), us(b - a), std::move(na)));
    int64_t nested_end = INT64_MIN;  // end of the last kernel nested in the node's slice
    std::stable_sort(ks->begin(), ks->end(), [](const GpuKernel& x, const GpuKernel& y) { return x.start_ns < y.start_ns; });
    for (const auto& k : *ks) {
      json ka = kernel_args(*k.rec, s);
      ka["node_name"] = name;
      const bool nests = k.start_ns >= nested_end;
      if (nests) nested_end = k.end_ns;
      out.push_back(slice(nests ? tid : tracks.overlapping.place(k.start_ns, k.end_ns), (*k.rec)["name"].get<std::string>(), "kernel",
                          us(k.start_ns), us(k.end_ns - k.start_ns), std::move(ka)));
    }
  }
  for (const auto& k : loose)
    out.push_back(slice(tracks.unattributed.place(k.start_ns, k.end_ns), (*k.rec)["name"].get<std::string>(), "kernel.unattributed",
                        us(k.start_ns), us(k.end_ns - k.start_ns), kernel_args(*k.rec, s)));
}
}  // namespace

json to_perfetto(const json& t) {
  std::vector<Slice> slices;
  const std::string model = t[kdoc::kMeta].value(kmeta::kModel, json::object()).value(kmodel::kFile, "minfer");
  GpuTracks gpu;
  bool host_nodes = false;  // a CUDA step is one graph: no host time per node, no such track

  std::map<std::string, const json*> graphs;
  for (const auto& g : t[kdoc::kGraphs]) graphs[g[kgraph::kId].get<std::string>()] = &g;

  double cursor_us = 0;  // where the next step starts when start_ms is absent
  for (const auto& s : t[kdoc::kSteps]) {
    const double step_us = s.contains("start_ms") ? s["start_ms"].get<double>() * 1e3 : cursor_us;
    const double dur_us = s.value(kstep::kTimeMs, 0.0) * 1e3;
    cursor_us = step_us + dur_us;
    json args = step_gpu_args(s);
    args["step"] = s[kstep::kIndex];
    args["tokens"] = s[kstep::kTokens].size();
    slices.push_back(host_slice(kStepTid, step_label(s), "step", step_us, dur_us, std::move(args)));
    auto g = graphs.find(s[kstep::kGraph].get<std::string>());
    const json* nodes = g == graphs.end() ? nullptr : &(*g->second)[kgraph::kNodes];
    double node_cursor = step_us;
    for (const auto& r : s[kstep::kNodes]) {
      if (!r.contains("time_us")) continue;
      const double dur = r["time_us"].get<double>();
      const double ts = r.contains("start_us") ? step_us + r["start_us"].get<double>() : node_cursor;
      node_cursor = ts + dur;
      const size_t id = r[knode::kId].get<size_t>();
      std::string name = "node " + std::to_string(id), op;
      if (nodes && id < nodes->size()) {
        name = (*nodes)[id]["name"].get<std::string>();
        op = (*nodes)[id]["op"].get<std::string>();
      }
      if (r.contains("no_output") && dur == 0) continue;  // fused away: nothing ran
      slices.push_back(host_slice(kNodeTid, name, op, ts, dur, {{"node", id}, {"step", s[kstep::kIndex]}}));
      host_nodes = true;
    }
    if (s.contains(kstep::kKernels)) gpu_step(s, step_us, nodes, gpu, slices);
  }

  json ev = json::array();
  ev.push_back(meta_event("process_name", -1, {{"name", "minfer " + model}}));
  ev.push_back(meta_event("thread_name", kStepTid, {{"name", "CPU: steps"}}));
  ev.push_back(meta_event("thread_sort_index", kStepTid, {{"sort_index", 1}}));
  if (host_nodes) {
    ev.push_back(meta_event("thread_name", kNodeTid, {{"name", "CPU: nodes"}}));
    ev.push_back(meta_event("thread_sort_index", kNodeTid, {{"sort_index", 2}}));
  }
  gpu.steps.name_tracks(ev, 10);
  gpu.nodes.name_tracks(ev, 20);
  gpu.overlapping.name_tracks(ev, 40);
  gpu.unattributed.name_tracks(ev, 50);
  std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    return a.ts_us != b.ts_us ? a.ts_us < b.ts_us : a.dur_us > b.dur_us;
  });
  for (auto& sl : slices) ev.push_back(std::move(sl.event));
  json other = {{"source", "minfer-trace export-perfetto"}, {"model", model}};
  for (const char* f : {"backend", "device", "matmul_path", "cuda_graph", "summaries", "cupti"})
    if (t[kdoc::kMeta].contains(f)) other[f] = t[kdoc::kMeta][f];
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

}  // namespace minfer::trace
