// The one-row fusion plan (engine/cuda/step_fusion.cpp) on the decode graphs of every family,
// checked member by member: which nodes each fused kernel computes. Plain C++ (no GPU needed:
// the plan is made from the graph alone), so it runs wherever the CUDA backend builds.
//   qwen2 (tiny):       norm+q/k/v (with their biases), rope+KV, o+residual, norm+gate/up+SwiGLU,
//                       down+residual per layer; result norm + LM head
//   qwen3 (qwen3-tiny): the same without biases, q/k norms folded into the rope+KV launch
//                       (NormRopeKv), attention width 128 against n_embd 64
//   llama (llama-tiny): normal-layout rope with rope_freqs divisors in the rope+KV launch
// and the cases that must not fuse: q and k rope with different divisors or layouts, a QK-norm
// output read by another node, a matvec the predicate refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/step_fusion.h"
#include "graph/build_graph.h"
#include "model/model.h"
#include "test_models.h"

using namespace minfer;
using cuda::FusedKind;

namespace {

bool any_matvec(const Node& n) { return (n.op == Op::MatMul || n.op == Op::Logits) && !n.weight.empty(); }

// The group's members by name, in group order.
std::vector<std::string> names(const Graph& g, const cuda::FusedGroup& grp) {
  std::vector<std::string> v;
  for (int id : grp.nodes) v.push_back(g.node(id).name);
  return v;
}

const cuda::FusedGroup* group_of(const Graph& g, const cuda::StepFusion& f, const std::string& node) {
  const int id = g.find(node);
  if (id < 0) return nullptr;
  const int gi = f.group_of[static_cast<size_t>(id)];
  return gi < 0 ? nullptr : &f.groups[static_cast<size_t>(gi)];
}

using Names = std::vector<std::string>;

// Every layer's groups, as the family's decode graph should have them.
void expect_layer_groups(const Graph& g, const cuda::StepFusion& f, int layer, bool qk_norm) {
  const std::string p = "blk." + std::to_string(layer) + ".";
  SCOPED_TRACE("layer " + std::to_string(layer));
  const auto* qkv = group_of(g, f, p + "attn_q");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->kind, FusedKind::NormMatvecs);
  EXPECT_EQ(names(g, *qkv), (Names{p + "attn_norm", p + "attn_q", p + "attn_k", p + "attn_v"}));
  const auto* rope = group_of(g, f, p + "kv_store");
  ASSERT_NE(rope, nullptr);
  if (qk_norm) {
    EXPECT_EQ(rope->kind, FusedKind::NormRopeKv);
    EXPECT_EQ(names(g, *rope), (Names{p + "attn_q_norm", p + "attn_k_norm", p + "q_rope", p + "k_rope", p + "kv_store"}));
  } else {
    EXPECT_EQ(rope->kind, FusedKind::RopeKv);
    EXPECT_EQ(names(g, *rope), (Names{p + "q_rope", p + "k_rope", p + "kv_store"}));
  }
  EXPECT_EQ(rope->last, g.find(p + "kv_store"));
  EXPECT_EQ(group_of(g, f, p + "attn"), nullptr) << "attention runs on its own";
  const auto* o = group_of(g, f, p + "attn_output");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->kind, FusedKind::MatvecResidual);
  EXPECT_EQ(names(g, *o), (Names{p + "attn_output", p + "attn_residual"}));
  const auto* ffn = group_of(g, f, p + "ffn_gate");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->kind, FusedKind::NormGateUpSwiglu);
  EXPECT_EQ(names(g, *ffn), (Names{p + "ffn_norm", p + "ffn_gate", p + "ffn_up", p + "ffn_swiglu"}));
  const auto* down = group_of(g, f, p + "ffn_down");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->kind, FusedKind::MatvecResidual);
  EXPECT_EQ(names(g, *down), (Names{p + "ffn_down", p + "ffn_residual"}));
}

void expect_family_plan(const std::string& preset, bool qk_norm) {
  SCOPED_TRACE(preset);
  auto path = minfer::testing::generated_model("fusion-" + preset, preset, GenWeights::Q8_0);
  if (path.empty()) GTEST_SKIP() << "SKIPPED: the vocabulary for " << preset << " is missing (npm ci)";
  auto m = Model::load(path);
  const Graph g = make_graph(*m, Phase::Decode, 1);
  const cuda::StepFusion f = cuda::plan_step_fusion(g, any_matvec);
  for (int l = 0; l < static_cast<int>(m->hp.n_layer); ++l) expect_layer_groups(g, f, l, qk_norm);
  const auto* head = group_of(g, f, "logits");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->kind, FusedKind::NormMatvecs);
  EXPECT_EQ(names(g, *head), (Names{"result_norm", "logits"}));
  // A prefill of several rows fuses nothing but the one-row tail (the result norm + LM head).
  const Graph pre = make_graph(*m, Phase::Prefill, 5);
  const cuda::StepFusion fp = cuda::plan_step_fusion(pre, any_matvec);
  ASSERT_EQ(fp.groups.size(), 1u);
  EXPECT_EQ(names(pre, fp.groups[0]), (Names{"result_norm", "logits"}));
}

}  // namespace

TEST(CudaStepFusion, Qwen2Plan) { expect_family_plan("tiny", false); }
TEST(CudaStepFusion, Qwen3PlanFoldsTheQkNormIntoRopeKv) { expect_family_plan("qwen3-tiny", true); }
TEST(CudaStepFusion, LlamaPlanFusesNormalRopeWithDivisors) {
  expect_family_plan("llama-tiny", false);
  auto path = minfer::testing::generated_model("fusion-llama-tiny", "llama-tiny", GenWeights::Q8_0);
  if (path.empty()) GTEST_SKIP() << "SKIPPED: the Llama 3 vocabulary is missing (npm ci)";
  auto m = Model::load(path);
  const Graph g = make_graph(*m, Phase::Decode, 1);
  EXPECT_EQ(g.node(g.find("blk.0.q_rope")).op, Op::RopeNormal);
  EXPECT_EQ(g.node(g.find("blk.0.q_rope")).weight, "rope_freqs.weight");
}

// What must not fuse: one launch rotates q and k with one table and one layout, and folds a
// QK-norm only when the rope is its only reader.
TEST(CudaStepFusion, RopeKvNeedsOneLayoutOneTableAndPrivateNorms) {
  auto path = minfer::testing::generated_model("fusion-qwen3-tiny", "qwen3-tiny", GenWeights::Q8_0);
  if (path.empty()) GTEST_SKIP() << "SKIPPED: the Qwen vocabulary is missing (npm ci)";
  auto m = Model::load(path);
  const Graph base = make_graph(*m, Phase::Decode, 1);
  const int kr = base.find("blk.0.k_rope"), kv = base.find("blk.0.kv_store"), qn = base.find("blk.0.attn_q_norm");
  {
    Graph g = base;  // k rope with divisors q rope lacks
    g.nodes[static_cast<size_t>(kr)].weight = "rope_freqs.weight";
    const auto f = cuda::plan_step_fusion(g, any_matvec);
    EXPECT_EQ(f.group_of[static_cast<size_t>(kv)], -1);
    EXPECT_EQ(f.group_of[static_cast<size_t>(kr)], -1);
    EXPECT_GE(f.group_of[static_cast<size_t>(base.find("blk.1.kv_store"))], 0) << "layer 1 is untouched";
  }
  {
    Graph g = base;  // k rope in the other layout
    g.nodes[static_cast<size_t>(kr)].op = Op::RopeNormal;
    EXPECT_EQ(cuda::plan_step_fusion(g, any_matvec).group_of[static_cast<size_t>(kv)], -1);
  }
  {
    Graph g = base;  // the q norm read by another node too: rope + KV fuse, the norms run alone
    g.nodes[static_cast<size_t>(base.find("blk.0.attn_residual"))].src.push_back(qn);
    const auto f = cuda::plan_step_fusion(g, any_matvec);
    const int gi = f.group_of[static_cast<size_t>(kv)];
    ASSERT_GE(gi, 0);
    EXPECT_EQ(f.groups[static_cast<size_t>(gi)].kind, FusedKind::RopeKv);
    EXPECT_EQ(f.group_of[static_cast<size_t>(qn)], -1);
  }
  {
    // A refused matvec (e.g. float weights): the norm and its matvecs run unfused, the rest stays.
    const auto f = cuda::plan_step_fusion(base, [](const Node& n) { return any_matvec(n) && n.name.find("attn_k") == std::string::npos; });
    EXPECT_EQ(f.group_of[static_cast<size_t>(base.find("blk.0.attn_norm"))], -1);
    EXPECT_GE(f.group_of[static_cast<size_t>(kv)], 0);
  }
  {
    // A matvec too wide for the fused prologue that still takes a residual epilogue (7B's FFN
    // down): down + residual fuse, nothing else changes; refused by both, it runs alone.
    const auto not_down = [](const Node& n) { return any_matvec(n) && n.name.find("ffn_down") == std::string::npos; };
    const int down = base.find("blk.0.ffn_down");
    const auto f = cuda::plan_step_fusion(base, not_down, any_matvec);
    const int gi = f.group_of[static_cast<size_t>(down)];
    ASSERT_GE(gi, 0);
    EXPECT_EQ(f.groups[static_cast<size_t>(gi)].kind, FusedKind::MatvecResidual);
    EXPECT_EQ(names(base, f.groups[static_cast<size_t>(gi)]), (Names{"blk.0.ffn_down", "blk.0.ffn_residual"}));
    EXPECT_GE(f.group_of[static_cast<size_t>(base.find("blk.0.ffn_gate"))], 0);
    EXPECT_EQ(cuda::plan_step_fusion(base, not_down, not_down).group_of[static_cast<size_t>(down)], -1);
  }
}
