// Graph builder and fusion pass: structure, fused nodes visible, consumers rewired.
#include <gtest/gtest.h>

#include "graph/build_graph.h"
#include "test_models.h"

using namespace minfer;

TEST(Graph, PrefillStructureAndFusion) {
  auto p = minfer::testing::generated_model("graph-tiny", "tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(p);
  auto m = Model::load(p);
  Graph g = build_graph(*m, Phase::Prefill, 5);
  ASSERT_EQ(g.nodes.size(), 3u + m->hp.n_layer * 20u + 3u);
  for (const Node& n : g.nodes) {
    for (int s : n.src) EXPECT_LT(s, n.id) << n.name << " reads a later node";
    EXPECT_TRUE(n.executed());
  }
  EXPECT_EQ(g.node(g.find("logits")).shape, (std::vector<int64_t>{1, m->hp.n_vocab}));
  EXPECT_EQ(g.node(g.find("blk.1.attn_k")).shape, (std::vector<int64_t>{5, m->hp.n_embd_kv()}));

  fuse(g);
  const Node& q = g.node(g.find("blk.0.attn_q"));
  EXPECT_EQ(q.bias, "blk.0.attn_q.bias");
  EXPECT_EQ(q.fused_from, std::vector<std::string>{"blk.0.attn_q_bias"});
  const Node& qb = g.node(g.find("blk.0.attn_q_bias"));
  EXPECT_EQ(qb.fused_into, q.id);
  EXPECT_FALSE(qb.has_output);
  const Node& rope = g.node(g.find("blk.0.q_rope"));
  EXPECT_EQ(rope.src[0], q.id) << "rope must read the fused matmul";
  const Node& sw = g.node(g.find("blk.0.ffn_swiglu"));
  EXPECT_EQ(sw.op, Op::SwiGLU);
  EXPECT_EQ(sw.src, (std::vector<int>{g.find("blk.0.ffn_gate"), g.find("blk.0.ffn_up")}));
  EXPECT_EQ(g.node(g.find("blk.0.ffn_silu")).fused_into, sw.id);
  EXPECT_FALSE(g.node(g.find("blk.0.kv_store")).has_output);
}

TEST(Graph, DecodeGraphIsOneRow) {
  auto p = minfer::testing::generated_model("graph-tiny", "tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(p);
  auto m = Model::load(p);
  Graph g = make_graph(*m, Phase::Decode, 1);
  for (const Node& n : g.nodes)
    if (n.dtype == DType::F32) {
      EXPECT_EQ(n.rows(), 1) << n.name;
    }
}
