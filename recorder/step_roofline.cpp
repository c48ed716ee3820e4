#include "step_roofline.h"

#include <algorithm>
#include <map>

#include "format/trace_keys.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

// Union-find over node ids: two kernels that compute a node in common belong to one group.
struct Groups {
  std::map<int, int> parent;
  int find(int x) {
    auto it = parent.try_emplace(x, x).first;
    if (it->second == x) return x;
    return it->second = find(it->second);
  }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

std::vector<int> kernel_nodes(const json& k) {
  std::vector<int> ids;
  auto cov = k.find("covers");
  if (cov != k.end() && cov->is_array() && !cov->empty())
    for (const auto& c : *cov) ids.push_back(c.get<int>());
  else
    ids.push_back(k["node"].get<int>());
  return ids;
}

void apply_roofs(RooflinePoint& p, const Roofs& roofs) {
  double roof_s = roofs.bandwidth_gbs > 0 ? p.bytes / (roofs.bandwidth_gbs * 1e9) : 0;
  double compute_s = 0;
  bool compute_known = true;
  for (int k = 0; k < 3; ++k) {
    if (p.ops_by_kind[k] <= 0) continue;
    const double peak = roofs.peak_ops_per_s(static_cast<OpsKind>(k));
    if (peak <= 0) compute_known = false;
    else compute_s += p.ops_by_kind[k] / peak;
  }
  // Without a bandwidth or a compute peak the roof is not known: say nothing rather than half.
  if (roofs.bandwidth_gbs <= 0 || !compute_known || p.gpu_us <= 0) return;
  p.bandwidth_bound = roof_s >= compute_s;
  roof_s = std::max(roof_s, compute_s);
  p.roof_us = roof_s * 1e6;
  p.fraction = p.roof_us / p.gpu_us;
  p.lost_us = p.gpu_us - p.roof_us;
}

}  // namespace

std::vector<RooflinePoint> step_roofline(const json& meta, const json& step, const json& nodes, const Roofs& roofs) {
  auto ks = step.find(keys::step::kKernels);
  if (ks == step.end() || !ks->is_array()) return {};
  const auto in_graph = [&](int id) { return id >= 0 && static_cast<size_t>(id) < nodes.size(); };
  Groups g;
  std::map<int, double> node_ns;  // kernel time by the first node of each kernel
  for (const auto& k : *ks) {
    if (!k.contains("node") || !k["node"].is_number_integer() || !in_graph(k["node"].get<int>())) continue;
    const std::vector<int> ids = kernel_nodes(k);
    if (!std::all_of(ids.begin(), ids.end(), in_graph)) continue;
    for (int id : ids) g.join(id, ids.front());
    node_ns[ids.front()] += k.value("duration_ns", 0.0);
  }
  std::map<int, RooflinePoint> by_root;
  for (auto& [id, parent] : g.parent) by_root[g.find(id)].nodes.push_back(id);
  for (auto& [id, ns] : node_ns) by_root[g.find(id)].gpu_us += ns * 1e-3;

  const StepShape shape = step_shape(meta, step);
  std::vector<RooflinePoint> out;
  for (auto& [root, p] : by_root) {
    std::sort(p.nodes.begin(), p.nodes.end());
    p.node = p.nodes.back();
    for (int id : p.nodes) {
      const NodeWork w = node_work(nodes, static_cast<size_t>(id), shape);
      p.bytes += w.bytes;
      p.ops += w.ops;
      p.ops_by_kind[static_cast<int>(w.kind)] += w.ops;
    }
    if (p.ops > 0)  // a group without arithmetic (a copy, a gather) stays F32
      p.kind = static_cast<OpsKind>(std::max_element(std::begin(p.ops_by_kind), std::end(p.ops_by_kind)) -
                                    std::begin(p.ops_by_kind));
    apply_roofs(p, roofs);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const RooflinePoint& a, const RooflinePoint& b) { return a.node < b.node; });
  return out;
}

}  // namespace minfer::trace
