#include "trace_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "format_number.h"
#include "format/trace_keys.h"
#include "roofline_table.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

std::string printable(std::string s) {
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

}  // namespace

std::string summarize_trace(const json& t, int top_nodes) {
  std::ostringstream os;
  const json& meta = t[kdoc::kMeta];
  const json model = meta.value(kmeta::kModel, json::object());
  os << "model     " << model.value(kmodel::kFile, "?") << "  (" << model.value(kmodel::kArchitecture, "?")
     << ", sha256 " << model.value(kmodel::kSha256, "?").substr(0, 16) << ")\n";
  os << "run       backend " << meta.value(kmeta::kBackend, "?") << ", matmul " << meta.value(kmeta::kMatmulPath, "?")
     << ", device " << meta.value(kmeta::kDevice, "?") << ", recorded " << meta.value(kmeta::kRecordedAt, "?") << "\n";
  if (meta.contains(kmeta::kCompare) && meta[kmeta::kCompare].is_object())  // v3 paired trace
    os << "paired    against the " << meta[kmeta::kCompare].value(keys::compare_meta::kPath, "?") << " path in lockstep "
       << "(`minfer-trace diff FILE` compares them)\n";
  if (meta.contains(kmeta::kTokensFrom) && meta[kmeta::kTokensFrom].is_object())
    os << "replayed  the tokens of " << meta[kmeta::kTokensFrom].value("file", "?") << " (--tokens-from)\n";
  const json& steps = t[kdoc::kSteps];
  size_t decode = steps.empty() ? 0 : steps.size() - 1;
  os << "steps     " << steps.size() << " (prefill + " << decode << " decode)"
     << (t.value(kdoc::kComplete, false) ? "" : "  [UNFINISHED trace: complete = false]") << "\n";

  // Tokens: the prompt, then what the run generated (chosen tokens).
  std::string prompt, generated;
  size_t n_prompt = 0;
  if (!steps.empty()) {
    for (const auto& tok : steps[0][kstep::kTokens]) prompt += tok.value(ktok::kText, ""), ++n_prompt;
  }
  for (const auto& s : steps)
    if (!s[kstep::kLogits].is_null()) generated += s[kstep::kLogits].value(keys::logits::kChosenText, "");
  os << "prompt    " << n_prompt << " tokens: \"" << printable(prompt) << "\"\n";
  os << "generated " << decode + (steps.empty() || steps.back()[kstep::kLogits].is_null() ? 0 : 1)
     << " tokens: \"" << printable(generated) << "\"\n";

  std::map<std::string, const json*> graphs;
  for (const auto& g : t[kdoc::kGraphs]) graphs[g[kgraph::kId].get<std::string>()] = &g;

  struct Peak { double absmax; size_t step; std::string name; };
  std::map<std::string, Peak> peaks;  // by node name: the largest |x| over all steps
  std::string first_bad;
  std::map<std::string, std::pair<double, int64_t>> op_time;  // op -> us, records
  double node_us_total = 0;
  for (size_t si = 0; si < steps.size(); ++si) {
    const json& s = steps[si];
    auto g = graphs.find(s[kstep::kGraph].get<std::string>());
    if (g == graphs.end()) continue;
    const json& nodes = (*g->second)[kgraph::kNodes];
    for (const auto& r : s[kstep::kNodes]) {
      const size_t id = r[knode::kId].get<size_t>();
      if (id >= nodes.size()) continue;
      const json& node = nodes[id];
      const std::string name = node["name"], op = node["op"];
      if (r.value("no_output", "") == "fused") continue;  // folded into another node: never ran
      const double us = r.value("time_us", 0.0);
      op_time[op].first += us;
      op_time[op].second += 1;
      node_us_total += us;
      if (!r.contains("stats")) continue;
      const json& st = r["stats"];
      if (first_bad.empty() && (st["nan"].get<int64_t>() > 0 || st["inf"].get<int64_t>() > 0))
        first_bad = "step " + std::to_string(si) + ", node " + std::to_string(id) + " " + name + " (" + op +
                    "): " + st["nan"].dump() + " NaN, " + st["inf"].dump() + " Inf";
      if (!st["min"].is_number()) continue;
      const double absmax = std::max(std::fabs(st["min"].get<double>()), std::fabs(st["max"].get<double>()));
      auto& p = peaks[name];
      if (p.name.empty() || absmax > p.absmax) p = {absmax, si, name};
    }
  }

  std::vector<Peak> top;
  for (auto& [k, p] : peaks) top.push_back(p);
  std::sort(top.begin(), top.end(), [](const Peak& x, const Peak& y) { return x.absmax > y.absmax; });
  if (top.size() > static_cast<size_t>(top_nodes)) top.resize(static_cast<size_t>(top_nodes));
  os << "\nlargest |x| by node (over all steps)\n";
  for (const auto& p : top) os << "  " << fmt("%12.4g", p.absmax) << "  " << p.name << "  (step " << p.step << ")\n";
  os << "\nNaN/Inf   " << (first_bad.empty() ? std::string("none") : "first at " + first_bad) << "\n";

  std::vector<std::pair<std::string, std::pair<double, int64_t>>> ops(op_time.begin(), op_time.end());
  std::sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
  os << "\ntime per op type (recorded nodes, all steps)\n";
  for (const auto& [op, v] : ops)
    os << "  " << op << std::string(op.size() < 10 ? 10 - op.size() : 1, ' ')
       << fmt("%12.3f ms", v.first / 1e3) << fmt("  %5.1f %%", node_us_total > 0 ? 100 * v.first / node_us_total : 0)
       << "  (" << v.second << " node runs)\n";
  os << roofline_table(t);
  if (t.contains(kdoc::kTimings)) {
    const json& tm = t[kdoc::kTimings];
    os << "\ntimings   ";
    for (const char* k : {keys::timings::kLoadMs, keys::timings::kPrefillMs, keys::timings::kPrefillTokS, keys::timings::kDecodeTokS})
      if (tm.contains(k) && tm[k].is_number()) os << k << " " << fmt("%.3g", tm[k].get<double>()) << "  ";
    os << "\n";
  }
  return os.str();
}

}  // namespace minfer::trace
