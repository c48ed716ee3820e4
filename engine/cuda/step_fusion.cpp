#include "cuda/step_fusion.h"

#include <algorithm>
#include <string>

namespace minfer::cuda {
namespace {

bool is_matvec(const Node& n) { return (n.op == Op::MatMul || n.op == Op::Logits) && n.rows() == 1; }
bool is_rope(const Node& n) { return n.op == Op::Rope || n.op == Op::RopeNormal; }

}  // namespace

StepFusion plan_step_fusion(const Graph& g, const std::function<bool(const Node&)>& quantized_matvec,
                            const std::function<bool(const Node&)>& residual_matvec) {
  const auto& takes_residual = residual_matvec ? residual_matvec : quantized_matvec;
  StepFusion f;
  f.group_of.assign(g.nodes.size(), -1);
  std::vector<std::vector<int>> users(g.nodes.size());
  for (const Node& n : g.nodes)
    if (n.executed())
      for (int s : n.src) users[static_cast<size_t>(s)].push_back(n.id);
  auto free = [&](int id) { return f.group_of[static_cast<size_t>(id)] < 0; };
  auto only_user = [&](int id, int user) {
    const auto& us = users[static_cast<size_t>(id)];
    return us.size() == 1 && us[0] == user;
  };
  auto add = [&](FusedKind k, std::vector<int> ids) {
    FusedGroup grp{k, std::move(ids), -1};
    grp.last = *std::max_element(grp.nodes.begin(), grp.nodes.end());
    for (int id : grp.nodes) f.group_of[static_cast<size_t>(id)] = static_cast<int>(f.groups.size());
    f.groups.push_back(std::move(grp));
  };

  for (const Node& n : g.nodes) {
    if (!n.executed()) continue;
    // RmsNorm feeding only matvecs over one row: the norm becomes the matvecs' prologue.
    if (n.op == Op::RmsNorm && n.rows() == 1) {
      const auto& us = users[static_cast<size_t>(n.id)];
      const bool all_matvecs = !us.empty() && std::all_of(us.begin(), us.end(), [&](int u) {
        const Node& m = g.node(u);
        return is_matvec(m) && quantized_matvec(m) && free(u);
      });
      if (!all_matvecs) continue;
      // gate + up feeding one SwiGLU (and nothing else): one launch with the activation.
      if (us.size() == 2) {
        const auto& a = users[static_cast<size_t>(us[0])];
        const auto& b = users[static_cast<size_t>(us[1])];
        if (a.size() == 1 && b.size() == 1 && a[0] == b[0]) {
          const Node& sw = g.node(a[0]);
          const Node &gate = g.node(sw.src[0]), &up = g.node(sw.src[1]);
          if (sw.op == Op::SwiGLU && gate.weight_type == up.weight_type && gate.cols() == up.cols() &&
              gate.bias.empty() && up.bias.empty()) {
            add(FusedKind::NormGateUpSwiglu, {n.id, gate.id, up.id, sw.id});
            continue;
          }
        }
      }
      if (us.size() <= 3) {
        std::vector<int> ids{n.id};
        ids.insert(ids.end(), us.begin(), us.end());
        add(FusedKind::NormMatvecs, ids);
      }
    }
  }
  for (const Node& n : g.nodes) {
    if (!n.executed() || !free(n.id)) continue;
    // A matvec whose only user is a residual Add: the add becomes its epilogue.
    if (is_matvec(n) && takes_residual(n)) {
      const auto& us = users[static_cast<size_t>(n.id)];
      if (us.size() == 1 && free(us[0])) {
        const Node& add_node = g.node(us[0]);
        if (add_node.op == Op::Add && add_node.src.size() == 2 && add_node.rows() == 1 &&
            add_node.src[0] != add_node.src[1])
          add(FusedKind::MatvecResidual, {n.id, add_node.id});
      }
    }
    // Attention(q_rope, kv_store): q rope, k rope and the KV store of the layer in one launch;
    // with qwen3's per-head norms of q and k before them, those too.
    if (n.op == Op::Attention && n.rows() == 1) {
      const Node& qr = g.node(n.src[0]);
      const Node& kv = g.node(n.src[1]);
      if (!is_rope(qr) || kv.op != Op::KvStore) continue;
      const Node& kr = g.node(kv.src[0]);
      // One launch rotates both with one table: the same layout and the same divisors.
      if (kr.op != qr.op || kr.weight != qr.weight || !free(qr.id) || !free(kr.id) || !free(kv.id)) continue;
      if (!only_user(qr.id, n.id) || !only_user(kr.id, kv.id)) continue;  // nothing else reads them
      const Node& qn = g.node(qr.src[0]);
      const Node& kn = g.node(kr.src[0]);
      if (qn.op == Op::HeadRmsNorm && kn.op == Op::HeadRmsNorm && free(qn.id) && free(kn.id) &&
          only_user(qn.id, qr.id) && only_user(kn.id, kr.id))
        add(FusedKind::NormRopeKv, {qn.id, kn.id, qr.id, kr.id, kv.id});
      else
        add(FusedKind::RopeKv, {qr.id, kr.id, kv.id});
    }
  }
  return f;
}

}  // namespace minfer::cuda
