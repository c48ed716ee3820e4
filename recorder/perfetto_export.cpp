#include "perfetto_export.h"

#include <map>
#include <string>

#include "json_out.h"

namespace minfer::trace {

using nlohmann::json;

namespace {
constexpr int kPid = 1;
constexpr int kStepTid = 1, kNodeTid = 2, kGpuTid = 3;

json meta_event(const char* what, int tid, const std::string& name) {
  json e = {{"ph", "M"}, {"pid", kPid}, {"name", what}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}
}  // namespace

json to_perfetto(const json& t) {
  json ev = json::array();
  const std::string model = t["meta"].value("model", json::object()).value("file", "minfer");
  ev.push_back(meta_event("process_name", -1, "minfer " + model));
  ev.push_back(meta_event("thread_name", kStepTid, "CPU: steps"));
  ev.push_back(meta_event("thread_name", kNodeTid, "CPU: nodes"));
  bool any_kernel = false;

  std::map<std::string, const json*> graphs;
  for (const auto& g : t["graphs"]) graphs[g["id"].get<std::string>()] = &g;

  double cursor_us = 0;  // where the next step starts when start_ms is absent
  for (const auto& s : t["steps"]) {
    const double step_us = s.contains("start_ms") ? s["start_ms"].get<double>() * 1e3 : cursor_us;
    const double dur_us = s.value("time_ms", 0.0) * 1e3;
    cursor_us = step_us + dur_us;
    const std::string label = std::string(s["phase"] == "prefill" ? "prefill" : "decode ") +
                              (s["phase"] == "prefill" ? "" : std::to_string(s["index"].get<int>()));
    ev.push_back({{"ph", "X"}, {"pid", kPid}, {"tid", kStepTid}, {"name", label}, {"cat", "step"},
                  {"ts", round6(step_us)}, {"dur", round6(dur_us)},
                  {"args", {{"step", s["index"]}, {"tokens", s["tokens"].size()}}}});
    auto g = graphs.find(s["graph"].get<std::string>());
    const json* nodes = g == graphs.end() ? nullptr : &(*g->second)["nodes"];
    double node_cursor = step_us;
    for (const auto& r : s["nodes"]) {
      if (!r.contains("time_us")) continue;
      const double dur = r["time_us"].get<double>();
      const double ts = r.contains("start_us") ? step_us + r["start_us"].get<double>() : node_cursor;
      node_cursor = ts + dur;
      const size_t id = r["id"].get<size_t>();
      std::string name = "node " + std::to_string(id), op;
      if (nodes && id < nodes->size()) {
        name = (*nodes)[id]["name"].get<std::string>();
        op = (*nodes)[id]["op"].get<std::string>();
      }
      if (r.contains("no_output") && dur == 0) continue;  // fused away: nothing ran
      ev.push_back({{"ph", "X"}, {"pid", kPid}, {"tid", kNodeTid}, {"name", name}, {"cat", op},
                    {"ts", round6(ts)}, {"dur", round6(dur)}, {"args", {{"node", id}, {"step", s["index"]}}}});
    }
    for (const auto& k : s["kernels"]) {
      any_kernel = true;
      json args = {{"node", k["node"]}, {"grid", k["grid"]}, {"block", k["block"]},
                   {"registers", k["registers"]}, {"shared_bytes", k["shared_bytes"]}, {"step", s["index"]}};
      ev.push_back({{"ph", "X"}, {"pid", kPid}, {"tid", kGpuTid}, {"name", k["name"]}, {"cat", "kernel"},
                    {"ts", round6(step_us + k["start_ns"].get<double>() / 1e3)},
                    {"dur", round6(k["duration_ns"].get<double>() / 1e3)}, {"args", args}});
    }
  }
  if (any_kernel) ev.push_back(meta_event("thread_name", kGpuTid, "GPU: kernels"));
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"},
          {"otherData", {{"source", "minfer-trace export-perfetto"}, {"model", model}}}};
}

}  // namespace minfer::trace
