#include "exec/buffer_plan.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace minfer {
namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();  // "live to the end of the step"

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

bool overlaps(int64_t f0, int64_t l0, int64_t f1, int64_t l1) { return f0 <= l1 && f1 <= l0; }

void check_id(const Graph& g, int id, const char* what) {
  if (id < 0 || static_cast<size_t>(id) >= g.nodes.size())
    fail("plan_buffers: ", what, " names node ", id, ", outside the graph's ", g.nodes.size(), " nodes");
}

}  // namespace

bool has_output_buffer(const Node& n) { return n.executed() && n.has_output && n.dtype == DType::F32; }

size_t output_buffer_bytes(const Node& n) { return static_cast<size_t>(n.rows() * n.cols()) * sizeof(float); }

BufferPlan plan_buffers(const Graph& g, const BufferPlanOptions& o) {
  const size_t n_nodes = g.nodes.size();
  if (o.align == 0 || (o.align & (o.align - 1)) != 0) fail("plan_buffers: alignment ", o.align, " is not a power of two");
  if (!o.position.empty() && o.position.size() != n_nodes)
    fail("plan_buffers: ", o.position.size(), " launch positions for ", n_nodes, " nodes");
  auto pos = [&](int id) -> int64_t { return o.position.empty() ? id : o.position[static_cast<size_t>(id)]; };

  BufferPlan p;
  p.offset.assign(n_nodes, -1);
  p.bytes.assign(n_nodes, 0);
  p.first.assign(n_nodes, 0);
  p.last.assign(n_nodes, 0);
  std::vector<char> placed(n_nodes, 0);
  for (const Node& n : g.nodes) placed[static_cast<size_t>(n.id)] = has_output_buffer(n);
  for (int id : o.external) {
    check_id(g, id, "external");
    placed[static_cast<size_t>(id)] = 0;
  }
  // Lifetimes: from the writing launch to the last reading launch.
  for (const Node& n : g.nodes)
    if (placed[static_cast<size_t>(n.id)]) p.first[static_cast<size_t>(n.id)] = p.last[static_cast<size_t>(n.id)] = pos(n.id);
  for (const Node& r : g.nodes) {
    if (!r.executed()) continue;
    for (int s : r.src) {
      check_id(g, s, "a source");
      if (placed[static_cast<size_t>(s)]) p.last[static_cast<size_t>(s)] = std::max(p.last[static_cast<size_t>(s)], pos(r.id));
    }
  }
  for (int id : o.live_to_end) {
    check_id(g, id, "live_to_end");
    p.last[static_cast<size_t>(id)] = kEnd;
  }
  // In place, in execution order (a chain of in-place nodes shares one buffer): the node is not
  // placed itself, its bytes are its root's, whose lifetime grows to cover the node's.
  p.shares_with.assign(n_nodes, -1);
  std::vector<int> in_place = o.in_place;
  std::sort(in_place.begin(), in_place.end(), [&](int a, int b) { return pos(a) < pos(b); });
  for (int id : in_place) {
    check_id(g, id, "in_place");
    const Node& n = g.nodes[static_cast<size_t>(id)];
    if (!placed[static_cast<size_t>(id)] || n.src.empty()) continue;
    const size_t s = static_cast<size_t>(n.src[0]);
    const int root = p.shares_with[s] >= 0 ? p.shares_with[s] : static_cast<int>(s);
    const bool source_placed = placed[s] || p.shares_with[s] >= 0;
    if (!source_placed || p.last[s] != pos(id) || output_buffer_bytes(g.nodes[s]) != output_buffer_bytes(n)) continue;
    p.shares_with[static_cast<size_t>(id)] = root;
    placed[static_cast<size_t>(id)] = 0;
    p.last[static_cast<size_t>(root)] = std::max(p.last[static_cast<size_t>(root)], p.last[static_cast<size_t>(id)]);
  }

  // Largest first (ties: earlier first), each at the lowest offset free over its lifetime.
  std::vector<int> order;
  for (const Node& n : g.nodes)
    if (placed[static_cast<size_t>(n.id)]) {
      p.bytes[static_cast<size_t>(n.id)] = align_up(std::max<size_t>(output_buffer_bytes(n), 1), o.align);
      p.separate_bytes += p.bytes[static_cast<size_t>(n.id)];
      order.push_back(n.id);
    }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (p.bytes[static_cast<size_t>(a)] != p.bytes[static_cast<size_t>(b)])
      return p.bytes[static_cast<size_t>(a)] > p.bytes[static_cast<size_t>(b)];
    return p.first[static_cast<size_t>(a)] < p.first[static_cast<size_t>(b)];
  });
  std::vector<int> done;
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of the placed outputs live with this one
  for (int id : order) {
    const size_t i = static_cast<size_t>(id);
    busy.clear();
    for (int d : done) {
      const size_t j = static_cast<size_t>(d);
      if (overlaps(p.first[i], p.last[i], p.first[j], p.last[j]))
        busy.emplace_back(static_cast<size_t>(p.offset[j]), static_cast<size_t>(p.offset[j]) + p.bytes[j]);
    }
    std::sort(busy.begin(), busy.end());
    size_t at = 0;
    for (const auto& [b, e] : busy) {
      if (at + p.bytes[i] <= b) break;  // fits in the gap before this one
      at = std::max(at, e);
    }
    p.offset[i] = static_cast<int64_t>(at);
    p.arena_bytes = std::max(p.arena_bytes, at + p.bytes[i]);
    done.push_back(id);
  }
  for (const Node& n : g.nodes)
    if (const int root = p.shares_with[static_cast<size_t>(n.id)]; root >= 0) {
      p.offset[static_cast<size_t>(n.id)] = p.offset[static_cast<size_t>(root)];
      p.bytes[static_cast<size_t>(n.id)] = p.bytes[static_cast<size_t>(root)];
      p.separate_bytes += p.bytes[static_cast<size_t>(n.id)];
    }
  return p;
}

std::string check_buffer_plan(const Graph& g, const BufferPlan& p) {
  std::vector<int> placed;
  for (const Node& n : g.nodes)
    if (static_cast<size_t>(n.id) < p.offset.size() && p.offset[static_cast<size_t>(n.id)] >= 0) placed.push_back(n.id);
  const auto root = [&](size_t i) {
    return i < p.shares_with.size() && p.shares_with[i] >= 0 ? static_cast<size_t>(p.shares_with[i]) : i;
  };
  for (size_t a = 0; a < placed.size(); ++a) {
    const size_t i = static_cast<size_t>(placed[a]);
    const size_t oi = static_cast<size_t>(p.offset[i]);
    if (oi + p.bytes[i] > p.arena_bytes) return "node '" + g.nodes[i].name + "' ends past the arena";
    for (size_t b = a + 1; b < placed.size(); ++b) {
      const size_t j = static_cast<size_t>(placed[b]);
      const size_t oj = static_cast<size_t>(p.offset[j]);
      const bool share = oi < oj + p.bytes[j] && oj < oi + p.bytes[i];
      if (share && root(i) != root(j) && overlaps(p.first[i], p.last[i], p.first[j], p.last[j]))
        return "nodes '" + g.nodes[i].name + "' and '" + g.nodes[j].name + "' are live at once and share bytes";
    }
  }
  return "";
}

}  // namespace minfer
