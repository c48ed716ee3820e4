#include "roofline_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "format_number.h"
#include "format/trace_keys.h"
#include "step_roofline.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }

std::string roofs_line(const json& meta, const Roofs& r) {
  std::string s = "roofs     ";
  if (r.bandwidth_gbs > 0)
    s += "bandwidth " + fmt("%.0f", r.bandwidth_gbs) + " GB/s (" + r.bandwidth_source +
         (r.bandwidth_source == "nominal" ? ": datasheet DRAM figure, the trace has no measured meta.device_limits" : "") + ")";
  else
    s += "bandwidth not recorded";
  if (r.peaks)
    s += "; " + std::string(r.peaks->label) + ": int8 " + fmt("%.0f", r.peaks->int8_tops) + " TOPS, f16 " +
         fmt("%.0f", r.peaks->f16_tflops) + " TFLOP/s, f32 " + fmt("%.1f", r.peaks->f32_tflops) + " TFLOP/s (dense)";
  else
    s += "; device \"" + meta.value("device", "?") + "\" is not in the peak table: no fraction of the roof";
  return s + "\n";
}

struct Row {
  size_t step;
  RooflinePoint p;
};

}  // namespace

std::string roofline_table(const json& t, int rows) {
  const json& meta = t[kdoc::kMeta];
  const Roofs roofs = trace_roofs(meta);
  std::map<std::string, const json*> graphs;
  for (const auto& g : t[kdoc::kGraphs]) graphs[g[kgraph::kId].get<std::string>()] = &g;
  std::vector<Row> all;
  for (size_t si = 0; si < t[kdoc::kSteps].size(); ++si) {
    const json& s = t[kdoc::kSteps][si];
    auto g = graphs.find(s.value(kstep::kGraph, ""));
    if (g == graphs.end()) continue;
    for (RooflinePoint& p : step_roofline(meta, s, (*g->second)[kgraph::kNodes], roofs)) all.push_back({si, std::move(p)});
  }
  if (all.empty()) return {};
  // Worst first: the most time lost against the roof; without roofs, the most GPU time.
  std::sort(all.begin(), all.end(), [](const Row& a, const Row& b) {
    const double ka = a.p.lost_us >= 0 ? a.p.lost_us : a.p.gpu_us, kb = b.p.lost_us >= 0 ? b.p.lost_us : b.p.gpu_us;
    return ka > kb;
  });
  double gpu = 0, roof = 0;
  for (const Row& r : all) gpu += r.p.gpu_us, roof += std::max(0.0, r.p.roof_us);

  std::ostringstream os;
  os << "\nroofline  (GPU time per kernel group against its roof; steps with kernel records; "
     << all.size() << " points, worst " << std::min<size_t>(all.size(), static_cast<size_t>(rows)) << " shown)\n";
  os << roofs_line(meta, roofs);
  if (roof > 0)
    os << "total     " << fmt("%.1f", gpu) << " us of GPU time, " << fmt("%.1f", roof) << " us at the roofs ("
       << fmt("%.1f", 100 * roof / gpu) << " %), " << fmt("%.1f", gpu - roof) << " us lost\n";
  os << "  step  node                          op                  bytes       ops  ops/B   GPU us    GB/s    TOPS  kind  roof %  lost us  bound\n";
  for (size_t i = 0; i < all.size() && i < static_cast<size_t>(rows); ++i) {
    const Row& r = all[i];
    const json& s = t[kdoc::kSteps][r.step];
    const json& nodes = (*graphs[s.value(kstep::kGraph, "")])[kgraph::kNodes];
    std::string op;
    for (int id : r.p.nodes) {
      const std::string o = nodes[static_cast<size_t>(id)].value("op", "?");
      if (nodes[static_cast<size_t>(id)].value("fused_into", -1) >= 0 || op.find(o) != std::string::npos) continue;
      op += (op.empty() ? "" : "+") + o;
    }
    std::string name = nodes[static_cast<size_t>(r.p.node)].value("name", "?");
    if (r.p.nodes.size() > 1) name += " (+" + std::to_string(r.p.nodes.size() - 1) + ")";
    const double s_time = r.p.gpu_us * 1e-6;
    os << fmt("  %4.0f", static_cast<double>(r.step)) << "  " << pad(name, 28) << "  "
       << pad(op, 14) << fmt(" %10.3g", r.p.bytes) << fmt(" %9.3g", r.p.ops)
       << fmt(" %6.2f", r.p.intensity()) << fmt(" %8.2f", r.p.gpu_us)
       << fmt(" %7.0f", r.p.bytes / s_time / 1e9) << fmt(" %7.3f", r.p.ops / s_time / 1e12) << "  "
       << pad(ops_kind_name(r.p.kind), 4)
       << (r.p.fraction >= 0 ? fmt(" %6.1f", 100 * r.p.fraction) : std::string("      -"))
       << (r.p.lost_us >= 0 ? fmt(" %8.2f", r.p.lost_us) : std::string("        -")) << "  "
       << (r.p.roof_us < 0 ? "-" : r.p.bandwidth_bound ? "memory" : "compute") << "\n";
  }
  return os.str();
}

}  // namespace minfer::trace
