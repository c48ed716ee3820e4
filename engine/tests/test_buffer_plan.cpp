// The buffer planner (exec/buffer_plan.h): on hand-made graphs, random graphs and the real Qwen2
// prefill graphs of the tiny and 0.5b presets (built from the hyper-parameters alone, no
// weights), no two outputs live at the same launch share a byte (brute force, lifetimes
// recomputed here from the graph), live-to-end outputs are never reused, and the arena is far
// smaller than one buffer per output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "exec/buffer_plan.h"
#include "graph/build_graph.h"
#include "model/generator.h"
#include "model/model.h"

using namespace minfer;

namespace {

// Lifetimes as the contract states them, computed independently of the planner.
struct Life {
  int64_t first = 0, last = 0;
};

std::vector<Life> lifetimes(const Graph& g, const BufferPlanOptions& o) {
  auto pos = [&](int id) -> int64_t { return o.position.empty() ? id : o.position[static_cast<size_t>(id)]; };
  std::vector<Life> l(g.nodes.size());
  for (const Node& n : g.nodes) l[static_cast<size_t>(n.id)] = {pos(n.id), pos(n.id)};
  for (const Node& r : g.nodes)
    if (r.executed())
      for (int s : r.src) l[static_cast<size_t>(s)].last = std::max(l[static_cast<size_t>(s)].last, pos(r.id));
  for (int id : o.live_to_end) l[static_cast<size_t>(id)].last = std::numeric_limits<int64_t>::max();
  return l;
}

// Every check the contract promises; returns the number of placed outputs.
size_t expect_valid(const Graph& g, const BufferPlanOptions& o, const BufferPlan& p) {
  const std::vector<Life> life = lifetimes(g, o);
  std::vector<int> placed;
  for (const Node& n : g.nodes) {
    const size_t i = static_cast<size_t>(n.id);
    const bool external = std::find(o.external.begin(), o.external.end(), n.id) != o.external.end();
    const bool want = has_output_buffer(n) && !external;
    EXPECT_EQ(p.offset[i] >= 0, want) << n.name;
    if (!want) continue;
    placed.push_back(n.id);
    EXPECT_EQ(p.offset[i] % static_cast<int64_t>(o.align), 0) << n.name;
    EXPECT_GE(p.bytes[i], output_buffer_bytes(n)) << n.name;
    EXPECT_LE(static_cast<size_t>(p.offset[i]) + p.bytes[i], p.arena_bytes) << n.name;
  }
  // Sharing while live together is allowed in place only: from the later node, first sources
  // lead to the earlier one, each link a node of o.in_place that is its source's last reader,
  // of the same size.
  const auto in_place_chain = [&](size_t from, size_t to) {
    for (size_t cur = from; cur != to;) {
      const Node& n = g.nodes[cur];
      if (std::find(o.in_place.begin(), o.in_place.end(), n.id) == o.in_place.end() || n.src.empty()) return false;
      const size_t s = static_cast<size_t>(n.src[0]);
      if (life[s].last != life[cur].first || output_buffer_bytes(g.nodes[s]) != output_buffer_bytes(n)) return false;
      cur = s;
    }
    return true;
  };
  for (size_t a = 0; a < placed.size(); ++a)
    for (size_t b = a + 1; b < placed.size(); ++b) {
      const size_t i = static_cast<size_t>(placed[a]), j = static_cast<size_t>(placed[b]);
      const bool live_together = life[i].first <= life[j].last && life[j].first <= life[i].last;
      const int64_t oi = p.offset[i], oj = p.offset[j];
      const int64_t ei = oi + static_cast<int64_t>(output_buffer_bytes(g.nodes[i]));
      const int64_t ej = oj + static_cast<int64_t>(output_buffer_bytes(g.nodes[j]));
      const bool share = oi < ej && oj < ei;
      EXPECT_FALSE(live_together && share && !in_place_chain(j, i)) << g.nodes[i].name << " [" << life[i].first << ", " << life[i].last << "] and "
                                           << g.nodes[j].name << " [" << life[j].first << ", " << life[j].last
                                           << "] share bytes";
    }
  EXPECT_EQ(check_buffer_plan(g, p), "");
  return placed.size();
}

int add(Graph& g, const std::string& name, std::vector<int> src, int64_t rows, int64_t cols) {
  Node n;
  n.name = name;
  n.op = Op::Add;
  n.src = std::move(src);
  n.shape = {rows, cols};
  return g.add(std::move(n));
}

// A Model with the preset's hyper-parameters and weight names/shapes, no data: enough for the
// graph builder.
Model shape_only_model(const std::string& preset) {
  Model m;
  m.hp = preset_hparams(preset);
  const HParams& h = m.hp;
  auto w = [](std::string name, int64_t rows, int64_t cols, WeightType t = WeightType::Q8_0) {
    WeightView v;
    v.name = std::move(name);
    v.type = t;
    v.rows = rows;
    v.cols = cols;
    return v;
  };
  m.token_embd = w("token_embd.weight", h.n_vocab, h.n_embd);
  m.output_norm = w("output_norm.weight", 1, h.n_embd, WeightType::F32);
  m.output = m.token_embd;
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights L;
    L.attn_norm = w(p + "attn_norm.weight", 1, h.n_embd, WeightType::F32);
    L.wq = w(p + "attn_q.weight", h.n_embd, h.n_embd);
    L.bq = w(p + "attn_q.bias", 1, h.n_embd, WeightType::F32);
    L.wk = w(p + "attn_k.weight", h.n_embd_kv(), h.n_embd);
    L.bk = w(p + "attn_k.bias", 1, h.n_embd_kv(), WeightType::F32);
    L.wv = w(p + "attn_v.weight", h.n_embd_kv(), h.n_embd);
    L.bv = w(p + "attn_v.bias", 1, h.n_embd_kv(), WeightType::F32);
    L.wo = w(p + "attn_output.weight", h.n_embd, h.n_embd);
    L.ffn_norm = w(p + "ffn_norm.weight", 1, h.n_embd, WeightType::F32);
    L.w_gate = w(p + "ffn_gate.weight", h.n_ff, h.n_embd);
    L.w_up = w(p + "ffn_up.weight", h.n_ff, h.n_embd);
    L.w_down = w(p + "ffn_down.weight", h.n_embd, h.n_ff);
    m.layers.push_back(L);
  }
  return m;
}

// The launch positions of the CUDA backend's one-row fusion groups (engine/cuda/step_fusion.h),
// spelled out by name: every member runs at its group's last node.
std::vector<int> one_row_fusion_positions(const Graph& g, int64_t n_layer) {
  std::vector<int> pos(g.nodes.size());
  for (const Node& n : g.nodes) pos[static_cast<size_t>(n.id)] = n.id;
  auto group = [&](std::vector<std::string> names) {
    std::vector<int> ids;
    for (const auto& s : names) ids.push_back(g.find(s));
    for (int id : ids) ASSERT_GE(id, 0);
    const int last = *std::max_element(ids.begin(), ids.end());
    for (int id : ids) pos[static_cast<size_t>(id)] = last;
  };
  for (int64_t l = 0; l < n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    group({p + "attn_norm", p + "attn_q", p + "attn_k", p + "attn_v"});
    group({p + "q_rope", p + "k_rope", p + "kv_store"});
    group({p + "attn_output", p + "attn_residual"});
    group({p + "ffn_norm", p + "ffn_gate", p + "ffn_up", p + "ffn_swiglu"});
    group({p + "ffn_down", p + "ffn_residual"});
  }
  group({"result_norm", "logits"});
  return pos;
}

}  // namespace

TEST(BufferPlan, ChainReusesAlternately) {
  // a -> b -> c -> d: a and c (and b and d) may share; neighbours may not.
  Graph g;
  const int a = add(g, "a", {}, 4, 64), b = add(g, "b", {a}, 4, 64), c = add(g, "c", {b}, 4, 64);
  add(g, "d", {c}, 4, 64);
  BufferPlanOptions o;
  const BufferPlan p = plan_buffers(g, o);
  EXPECT_EQ(expect_valid(g, o, p), 4u);
  EXPECT_EQ(p.arena_bytes, 2u * 1024u);
  EXPECT_EQ(p.separate_bytes, 4u * 1024u);
}

TEST(BufferPlan, InputAndOutputOfOneLaunchNeverShare) {
  // b reads a: a's last use is b's launch, b's first is the same launch: they overlap.
  Graph g;
  const int a = add(g, "a", {}, 1, 64);
  add(g, "b", {a}, 1, 64);
  BufferPlanOptions o;
  const BufferPlan p = plan_buffers(g, o);
  expect_valid(g, o, p);
  EXPECT_NE(p.offset[0], p.offset[1]);
}

TEST(BufferPlan, SkipConnectionStaysLive) {
  // x -> n -> m -> y = x + m: x is read at the end, so it shares with nothing in between.
  Graph g;
  const int x = add(g, "x", {}, 8, 32), n = add(g, "n", {x}, 8, 32), m = add(g, "m", {n}, 8, 32);
  const int y = add(g, "y", {x, m}, 8, 32);
  add(g, "z", {y}, 8, 32);
  BufferPlanOptions o;
  const BufferPlan p = plan_buffers(g, o);
  expect_valid(g, o, p);
  for (int other : {n, m, y}) EXPECT_NE(p.offset[static_cast<size_t>(x)], p.offset[static_cast<size_t>(other)]);
}

TEST(BufferPlan, LiveToEndIsNeverReused) {
  Graph g;
  int prev = add(g, "n0", {}, 2, 64);
  for (int i = 1; i < 8; ++i) prev = add(g, std::string("n").append(std::to_string(i)), {prev}, 2, 64);
  BufferPlanOptions o;
  o.live_to_end = {2};  // read after the step
  const BufferPlan p = plan_buffers(g, o);
  expect_valid(g, o, p);
  // n0 is dead before n2 is written and may share with it; nothing from n1 on may.
  for (const Node& n : g.nodes)
    if (n.id != 2 && n.id >= 1) {
      EXPECT_NE(p.offset[static_cast<size_t>(n.id)], p.offset[2]) << n.name;
    }
  EXPECT_EQ(p.last[2], std::numeric_limits<int64_t>::max());
}

TEST(BufferPlan, FusedGroupExtendsLifetimes) {
  // a -> b -> c, with b and c one fused launch (at c): a is read at c's launch, and b is written
  // there. Without the positions a and c could share; with them they may not.
  Graph g;
  const int a = add(g, "a", {}, 1, 64), b = add(g, "b", {a}, 1, 64), c = add(g, "c", {b}, 1, 64);
  add(g, "d", {c}, 1, 64);
  BufferPlanOptions plain;
  const BufferPlan p0 = plan_buffers(g, plain);
  expect_valid(g, plain, p0);
  EXPECT_EQ(p0.offset[static_cast<size_t>(a)], p0.offset[static_cast<size_t>(c)]);
  BufferPlanOptions fused;
  fused.position = {0, 2, 2, 3};
  const BufferPlan p1 = plan_buffers(g, fused);
  expect_valid(g, fused, p1);
  for (int x : {a, b, c})
    for (int y : {a, b, c})
      if (x != y) {
        EXPECT_NE(p1.offset[static_cast<size_t>(x)], p1.offset[static_cast<size_t>(y)]);
      }
}

TEST(BufferPlan, InPlaceTakesTheSourcesBytesOnlyFromItsLastReader) {
  // a -> b -> c -> d, b and c in place: b writes over a, c over b (one buffer for a, b, c).
  Graph g;
  const int a = add(g, "a", {}, 4, 64), b = add(g, "b", {a}, 4, 64), c = add(g, "c", {b}, 4, 64);
  add(g, "d", {c}, 4, 64);
  BufferPlanOptions o;
  o.in_place = {c, b};  // any order
  const BufferPlan p = plan_buffers(g, o);
  expect_valid(g, o, p);
  EXPECT_EQ(p.offset[static_cast<size_t>(b)], p.offset[static_cast<size_t>(a)]);
  EXPECT_EQ(p.offset[static_cast<size_t>(c)], p.offset[static_cast<size_t>(a)]);
  EXPECT_EQ(p.shares_with[static_cast<size_t>(c)], a);
  EXPECT_EQ(p.arena_bytes, 2u * 1024u);  // a/b/c, and d
  // Refused: a source read again later (a skip connection), a different size, a live-to-end source.
  Graph h;
  const int x = add(h, "x", {}, 4, 64), y = add(h, "y", {x}, 4, 64), z = add(h, "z", {y}, 2, 64);
  add(h, "w", {x, z}, 2, 64);
  BufferPlanOptions q;
  q.in_place = {y, z};
  const BufferPlan r = plan_buffers(h, q);
  expect_valid(h, q, r);
  EXPECT_EQ(r.shares_with[static_cast<size_t>(y)], -1);  // x is read again by w
  EXPECT_EQ(r.shares_with[static_cast<size_t>(z)], -1);  // 2 rows from 4
  EXPECT_NE(r.offset[static_cast<size_t>(y)], r.offset[static_cast<size_t>(x)]);
  BufferPlanOptions e;
  e.in_place = {b};
  e.live_to_end = {a};
  EXPECT_EQ(plan_buffers(g, e).shares_with[static_cast<size_t>(b)], -1);
}

TEST(BufferPlan, SkipsNodesWithoutBuffersAndExternals) {
  Graph g;
  const int in = add(g, "tokens", {}, 4, 1);
  g.nodes[static_cast<size_t>(in)].dtype = DType::I32;
  const int a = add(g, "a", {in}, 4, 64);
  const int kv = add(g, "kv", {a}, 4, 64);
  g.nodes[static_cast<size_t>(kv)].has_output = false;
  const int f = add(g, "folded", {a}, 4, 64);
  g.nodes[static_cast<size_t>(f)].fused_into = a;
  const int b = add(g, "b", {a, kv}, 4, 64);
  const int out = add(g, "out", {b}, 1, 64);
  BufferPlanOptions o;
  o.external = {out};
  const BufferPlan p = plan_buffers(g, o);
  EXPECT_EQ(expect_valid(g, o, p), 2u);
  for (int id : {in, kv, f, out}) EXPECT_EQ(p.offset[static_cast<size_t>(id)], -1);
}

TEST(BufferPlan, BadOptionsAreErrors) {
  Graph g;
  add(g, "a", {}, 1, 4);
  BufferPlanOptions o;
  o.position = {0, 1};
  EXPECT_THROW(plan_buffers(g, o), Error);
  o = {};
  o.live_to_end = {3};
  EXPECT_THROW(plan_buffers(g, o), Error);
  o = {};
  o.align = 48;
  EXPECT_THROW(plan_buffers(g, o), Error);
}

TEST(BufferPlan, RandomGraphs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Graph g;
    const int n = 2 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      std::vector<int> src;
      const int k = i == 0 ? 0 : static_cast<int>(rng() % 3);
      for (int j = 0; j < k; ++j) src.push_back(static_cast<int>(rng() % static_cast<unsigned>(i)));
      add(g, std::string("n").append(std::to_string(i)), src, 1 + rng() % 16, 1 + rng() % 300);
      if (rng() % 8 == 0) g.nodes.back().has_output = false;
    }
    BufferPlanOptions o;
    o.align = 1u << (rng() % 9);
    if (rng() % 2) {  // random fused groups: runs of consecutive nodes launched at their last
      o.position.resize(static_cast<size_t>(n));
      for (int i = 0; i < n;) {
        const int len = 1 + static_cast<int>(rng() % 4);
        const int last = std::min(n, i + len) - 1;
        for (int j = i; j <= last; ++j) o.position[static_cast<size_t>(j)] = last;
        i = last + 1;
      }
    }
    o.live_to_end = {n - 1};
    if (rng() % 3 == 0) o.live_to_end.push_back(static_cast<int>(rng() % static_cast<unsigned>(n)));
    for (int i = 0; i < n; ++i)
      if (rng() % 3 == 0) o.in_place.push_back(i);
    const BufferPlan p = plan_buffers(g, o);
    expect_valid(g, o, p);
    EXPECT_LE(p.arena_bytes, p.separate_bytes);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "trial " << trial;
      return;
    }
  }
}

// The real graphs. Sizes for the 0.5b preset at 4096 tokens: ffn_gate/ffn_up/ffn_swiglu are
// 4096 x 4864 f32 (76 MiB each) and live together at the SwiGLU; the arena holds about that
// plus the residual stream, against ~7 GiB for one buffer per node.
struct RealCase {
  const char* preset;
  int n_tokens;
  double max_arena_mib;  // the expected arena (logits aside), with some margin
  double min_saving;     // one buffer per output over the arena, at least
};

class BufferPlanQwen2 : public ::testing::TestWithParam<RealCase> {};

TEST_P(BufferPlanQwen2, PrefillGraph) {
  const RealCase c = GetParam();
  const Model m = shape_only_model(c.preset);
  const Graph g = make_graph(m, Phase::Prefill, c.n_tokens);
  const int logits = g.find("logits");
  ASSERT_EQ(logits, static_cast<int>(g.nodes.size()) - 1);
  BufferPlanOptions o;
  o.live_to_end = {logits};
  // As the CUDA backend sees it: positions of its fused groups (only one-row steps have them).
  if (c.n_tokens == 1) o.position = one_row_fusion_positions(g, m.hp.n_layer);
  const BufferPlan p = plan_buffers(g, o);
  expect_valid(g, o, p);
  // The logits are never reused: nothing shares their bytes (checked above against the
  // recomputed lifetimes), and their lifetime runs to the end.
  EXPECT_EQ(p.last[static_cast<size_t>(logits)], std::numeric_limits<int64_t>::max());
  // The backend gives the logits a buffer of their own: the rest goes to the arena.
  BufferPlanOptions ext = o;
  ext.external = {logits};
  const BufferPlan pe = plan_buffers(g, ext);
  expect_valid(g, ext, pe);
  EXPECT_EQ(pe.offset[static_cast<size_t>(logits)], -1);
  const double arena = pe.arena_bytes / 1048576.0, separate = pe.separate_bytes / 1048576.0;
  EXPECT_LE(arena, c.max_arena_mib);
  // SwiGLU in place over its gate, as the CUDA backend plans a prefill: where the FFN is the peak
  // (0.5b, 512 tokens and more) the arena shrinks by most of one n_ff buffer (the greedy
  // placement keeps ~80 % of it: 65 of 76 MiB at 4096 tokens).
  BufferPlanOptions ip = ext;
  for (const Node& n : g.nodes)
    if (n.op == Op::SwiGLU) ip.in_place.push_back(n.id);
  const BufferPlan pi = plan_buffers(g, ip);
  expect_valid(g, ip, pi);
  EXPECT_LE(pi.arena_bytes, pe.arena_bytes);
  const double ffn = static_cast<double>(c.n_tokens) * static_cast<double>(m.hp.n_ff) * sizeof(float);
  if (std::string(c.preset) != "tiny" && c.n_tokens >= 512)
    EXPECT_GE(static_cast<double>(pe.arena_bytes - pi.arena_bytes), 0.75 * ffn);
  EXPECT_GE(separate / arena, c.min_saving) << "arena " << arena << " MiB, separate " << separate << " MiB";
  std::printf("%s prefill of %d tokens: arena %.2f MiB (+ logits %.2f MiB), one buffer per output %.2f MiB\n", c.preset,
              c.n_tokens, arena, output_buffer_bytes(g.node(logits)) / 1048576.0, separate);
}

INSTANTIATE_TEST_SUITE_P(Presets, BufferPlanQwen2,
                         ::testing::Values(RealCase{"tiny", 1, 0.1, 3}, RealCase{"tiny", 9, 0.1, 3},
                                           RealCase{"tiny", 512, 4, 3}, RealCase{"qwen2.5-0.5b", 1, 0.2, 20},
                                           RealCase{"qwen2.5-0.5b", 512, 40, 20},
                                           RealCase{"qwen2.5-0.5b", 4096, 300, 20}),
                         [](const auto& info) {
                           std::string s = std::string(info.param.preset) + "_" + std::to_string(info.param.n_tokens);
                           for (char& ch : s)
                             if (ch == '.' || ch == '-') ch = '_';
                           return s;
                         });
