// Every graph op on both backends in one test (as ggml's test-backend-ops does, at the level of
// a whole model): the tiny preset in every weight type, both prefill paths, a prefill and
// decode steps on the same tokens; each node's CUDA output is compared with the CPU's. The same
// for the other families' tiny presets (qwen3-tiny: QK-norm, attention width != n_embd, no
// biases; llama-tiny: normal-layout RoPE with rope_freqs divisors, no biases), both paths, with
// CUDA graphs and fusion as a run has them (default).
// Also: a decode step replayed as a CUDA graph equals the eager run bit for bit, and the fused
// one-row kernels equal the unfused ones. The programs' choice of a backend (--backend, with the
// program's CudaOptions) is tested with it: recorder/programs/tests/test_cuda_backend_choice.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "exec/executor.h"
#include "graph/build_graph.h"
#include "test_models.h"
#include "tiny_run.h"

using namespace minfer;
using minfer::testing::rel_l2;

namespace {

using minfer::testing::NodeCapture;

using minfer::testing::StepResult;

using minfer::testing::kPrompt;
using minfer::testing::kDecodeInputs;  // teacher-forced

// The model with its prefill (the prompt) and decode graphs.
struct TinyModel {
  std::unique_ptr<Model> m;
  Graph pre, dec;
};

TinyModel load_tiny(const std::string& path) {
  TinyModel t;
  t.m = Model::load(path);
  t.pre = make_graph(*t.m, Phase::Prefill, static_cast<int>(kPrompt.size()));
  t.dec = make_graph(*t.m, Phase::Decode, 1);
  return t;
}

std::vector<StepResult> run_steps(const TinyModel& t, Backend& b) {
  return minfer::testing::run_teacher_forced(b, t.pre, t.dec);
}

int argmax(const std::vector<float>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

struct Case {
  const char* weights;
  GenWeights gen;
  MatmulPath path;
  double prefill_tol;  // relative L2 error per node output, CUDA vs CPU, in the prefill step
  double decode_tol;   // the same in the decode steps
  const char* preset = "tiny";  // minfer-gen preset (qwen2 "tiny", "qwen3-tiny", "llama-tiny")
};

// The generated model's tag: "cuda-q8_0" for the qwen2 tiny preset, "cuda-qwen3-tiny-q8_0" else.
std::string model_tag(const char* preset, const char* weights) {
  const std::string p = preset;
  return "cuda-" + (p == "tiny" ? std::string() : p + "-") + weights;
}
std::string model_tag(const Case& c) { return model_tag(c.preset, c.weights); }

// The GoogleTest name of a case: "q8_0_mmq", "qwen3_tiny_q8_0_f16".
std::string case_name(const Case& c) {
  const std::string p = c.preset;
  std::string n = (p == "tiny" ? std::string() : p + "_") + c.weights + "_" + matmul_path_name(c.path, "cuda");
  std::replace(n.begin(), n.end(), '-', '_');
  std::replace(n.begin(), n.end(), '.', '_');
  return n;
}

// The other families' tiny presets, run by every whole-model test below beside qwen2's "tiny".
const char* const kFamilyPresets[] = {"qwen3-tiny", "llama-tiny"};

// Tolerances (measured on the H200 in the comments' order of magnitude, with 2-4x margin):
// - f32 math in another order: ~1e-6.
// - MMQ with the legacy types: both sides quantize activations to 8 bits in the same 32-element
//   blocks (Q8_0 on the CPU, Q8_1 here: the same d and q): ~1e-7.
// - K-quants: the CPU's dots take 256-element Q8_K activations, ours 32-element Q8_1: ~2e-2.
// - f16 path: weights and activations rounded to f16 (the CPU computes in f32): ~1e-3 in the
//   prefill. The decode steps (matvecs on int8 activations on both sides) then see a KV cache
//   that differs by ~1e-3, and re-quantizing slightly different activations to 8 bits flips
//   roundings: ~2e-2 there.
// - bf16: activations rounded to bf16 for the tensor cores: ~5e-3.
const Case kCases[] = {
    {"f32", GenWeights::F32, MatmulPath::MMQ, 1e-5, 1e-5},
    {"f16", GenWeights::F16, MatmulPath::MMQ, 3e-3, 3e-3},
    {"bf16", GenWeights::BF16, MatmulPath::MMQ, 2e-2, 2e-2},
    {"q8_0", GenWeights::Q8_0, MatmulPath::MMQ, 1e-5, 1e-5},
    {"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, 1e-5, 1e-5},
    {"q4_1", GenWeights::Q4_1, MatmulPath::MMQ, 1e-5, 1e-5},
    {"q5_0", GenWeights::Q5_0, MatmulPath::MMQ, 1e-5, 1e-5},
    {"q5_1", GenWeights::Q5_1, MatmulPath::MMQ, 1e-5, 1e-5},
    {"q4_k", GenWeights::Q4_K, MatmulPath::MMQ, 6e-2, 6e-2},
    {"q5_k", GenWeights::Q5_K, MatmulPath::MMQ, 6e-2, 6e-2},
    {"q6_k", GenWeights::Q6_K, MatmulPath::MMQ, 6e-2, 6e-2},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::MMQ, 6e-2, 6e-2},
    {"q8_0", GenWeights::Q8_0, MatmulPath::Float, 1e-2, 6e-2},
    {"q4_0", GenWeights::Q4_0, MatmulPath::Float, 1e-2, 6e-2},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, 1e-2, 6e-2},
};

// qwen3-tiny and llama-tiny with the tiny preset's tolerances (the same kernels, plus
// head_rms_norm / rope_normal, which agree with their CPU twins to ~1e-7): float weights,
// the legacy types, a K-quant mix, on both prefill paths. One exception, measured on the H200:
// llama-tiny's K-quant decode logits reach 5.5e-2 and 6.3e-2 at some steps (its layers stay at
// ~2e-2, as qwen2's): the K-quant matvecs quantize activations to Q8_K (256) on the CPU and Q8_1
// (32) on CUDA, and the last hidden state's difference shows in the logits at those steps; 8e-2 there.
const Case kFamilyCases[] = {
    {"f32", GenWeights::F32, MatmulPath::MMQ, 1e-5, 1e-5, "qwen3-tiny"},
    {"f16", GenWeights::F16, MatmulPath::MMQ, 3e-3, 3e-3, "qwen3-tiny"},
    {"q8_0", GenWeights::Q8_0, MatmulPath::MMQ, 1e-5, 1e-5, "qwen3-tiny"},
    {"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, 1e-5, 1e-5, "qwen3-tiny"},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::MMQ, 6e-2, 6e-2, "qwen3-tiny"},
    {"q8_0", GenWeights::Q8_0, MatmulPath::Float, 1e-2, 6e-2, "qwen3-tiny"},
    {"q4_0", GenWeights::Q4_0, MatmulPath::Float, 1e-2, 6e-2, "qwen3-tiny"},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, 1e-2, 6e-2, "qwen3-tiny"},
    {"f32", GenWeights::F32, MatmulPath::MMQ, 1e-5, 1e-5, "llama-tiny"},
    {"f16", GenWeights::F16, MatmulPath::MMQ, 3e-3, 3e-3, "llama-tiny"},
    {"q8_0", GenWeights::Q8_0, MatmulPath::MMQ, 1e-5, 1e-5, "llama-tiny"},
    {"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, 1e-5, 1e-5, "llama-tiny"},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::MMQ, 6e-2, 8e-2, "llama-tiny"},
    {"q8_0", GenWeights::Q8_0, MatmulPath::Float, 1e-2, 6e-2, "llama-tiny"},
    {"q4_0", GenWeights::Q4_0, MatmulPath::Float, 1e-2, 6e-2, "llama-tiny"},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, 1e-2, 8e-2, "llama-tiny"},
};

}  // namespace

class CudaVsCpu : public ::testing::TestWithParam<Case> {};

TEST_P(CudaVsCpu, EveryNodeOfPrefillAndDecode) {
  MINFER_REQUIRE_GPU();
  const Case& c = GetParam();
  auto path = minfer::testing::generated_model(model_tag(c), c.preset, c.gen);
  MINFER_REQUIRE_MODEL(path);
  const TinyModel t = load_tiny(path);
  ASSERT_TRUE(t.m->hp.arch == preset_hparams(c.preset).arch) << c.preset;
  CpuBackend cpu(*t.m, c.path);
  CudaBackend gpu(*t.m, c.path);
  const auto a = run_steps(t, cpu);
  const auto b = run_steps(t, gpu);
  ASSERT_EQ(a.size(), b.size());
  int same_top1 = 0;
  for (size_t s = 0; s < a.size(); ++s) {
    const Graph& g = s == 0 ? t.pre : t.dec;
    const double tol = s == 0 ? c.prefill_tol : c.decode_tol;
    double worst = 0;
    std::string worst_node;
    for (const Node& n : g.nodes) {
      const auto& x = a[s].nodes[static_cast<size_t>(n.id)];
      const auto& y = b[s].nodes[static_cast<size_t>(n.id)];
      ASSERT_EQ(x.size(), y.size()) << n.name;
      if (x.empty()) continue;
      const double e = rel_l2(y, x);
      if (e > worst) worst = e, worst_node = n.name;
      EXPECT_LE(e, tol) << c.preset << " " << c.weights << " " << matmul_path_name(c.path, "cuda") << " step " << s
                        << " node " << n.name;
    }
    const double le = rel_l2(b[s].logits, a[s].logits);
    EXPECT_LE(le, tol) << "logits, step " << s;
    same_top1 += argmax(a[s].logits) == argmax(b[s].logits);
    std::printf("  %-10s %-6s %-3s step %zu: worst node %-22s rel.err %.2e, logits %.2e\n", c.preset, c.weights,
                matmul_path_name(c.path, "cuda"), s, worst_node.c_str(), worst, le);
  }
  // Random weights give near-ties; allow one flip in seven steps.
  EXPECT_GE(same_top1, static_cast<int>(a.size()) - 1);
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, CudaVsCpu, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return case_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Families, CudaVsCpu, ::testing::ValuesIn(kFamilyCases),
                         [](const auto& info) { return case_name(info.param); });

// The decode step captured once as a CUDA graph and replayed must equal the eager kernels
// exactly (same kernels, same order), for every step: proves the position and KV length are
// read from device memory, not baked into the capture.
// Every family: qwen2's tiny, qwen3-tiny, llama-tiny.
TEST(CudaBackend, GraphReplayEqualsEager) {
  MINFER_REQUIRE_GPU();
  for (const char* preset : {"tiny", kFamilyPresets[0], kFamilyPresets[1]}) {
    SCOPED_TRACE(preset);
    auto path = minfer::testing::generated_model(model_tag(preset, "q4_0"), preset, GenWeights::Q4_0);
    MINFER_REQUIRE_MODEL(path);
    const TinyModel t = load_tiny(path);
    CudaBackend graphed(*t.m, MatmulPath::MMQ);
    ASSERT_TRUE(graphed.step_graphs());
    CudaOptions no_graphs;
    no_graphs.step_graphs = false;  // MINFER_NO_CUDA_GRAPH=1
    CudaBackend eager(*t.m, MatmulPath::MMQ, no_graphs);
    ASSERT_FALSE(eager.step_graphs());
    const auto a = run_steps(t, graphed);
    const auto b = run_steps(t, eager);
    for (size_t s = 0; s < a.size(); ++s) {
      EXPECT_EQ(a[s].logits, b[s].logits) << "step " << s;
      for (size_t i = 0; i < a[s].nodes.size(); ++i) EXPECT_EQ(a[s].nodes[i], b[s].nodes[i]) << "step " << s << " node " << i;
    }
  }
}

// The fused one-row kernels (norm + q/k/v, rope + KV store, gate/up + SwiGLU, matvec + residual,
// norm + LM head) replayed in the decode graph against the unfused kernels run eagerly, every
// node of every step, on every quantized type: the fused kernels reuse the unfused ones'
// arithmetic, so the outputs agree to float rounding (1e-6 relative; the norm's reduction
// order is the only source of difference) and the greedy tokens are the same.
class FusedVsUnfused : public ::testing::TestWithParam<Case> {};

// Case c's model on a backend with `fused_opts` (fusion and graphs on) against the unfused kernels
// run eagerly: every node of every step within 1e-6 relative L2, the same greedy tokens.
void expect_fused_matches_unfused(const Case& c, const CudaOptions& fused_opts) {
  auto path = minfer::testing::generated_model(model_tag(c), c.preset, c.gen);
  MINFER_REQUIRE_MODEL(path);
  const TinyModel t = load_tiny(path);
  CudaBackend fused(*t.m, c.path, fused_opts);
  CudaOptions unfused_eager;
  unfused_eager.step_fusion = false;  // MINFER_CUDA_FUSION=0
  unfused_eager.step_graphs = false;  // MINFER_NO_CUDA_GRAPH=1
  CudaBackend plain(*t.m, c.path, unfused_eager);
  const auto a = run_steps(t, plain);
  const auto b = run_steps(t, fused);
  for (size_t s = 0; s < a.size(); ++s) {
    for (size_t i = 0; i < a[s].nodes.size(); ++i) {
      if (a[s].nodes[i].empty()) continue;
      EXPECT_LE(rel_l2(b[s].nodes[i], a[s].nodes[i]), 1e-6)
          << c.preset << " " << c.weights << " step " << s << " node " << (s == 0 ? t.pre : t.dec).nodes[i].name;
    }
    EXPECT_EQ(argmax(a[s].logits), argmax(b[s].logits)) << "step " << s;
  }
}

TEST_P(FusedVsUnfused, EveryNodeOfEveryStep) {
  MINFER_REQUIRE_GPU();
  expect_fused_matches_unfused(GetParam(), CudaOptions{});
}

const Case kQuantCases[] = {
    {"q8_0", GenWeights::Q8_0, MatmulPath::MMQ, 0, 0}, {"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, 0, 0},
    {"q4_1", GenWeights::Q4_1, MatmulPath::MMQ, 0, 0}, {"q5_0", GenWeights::Q5_0, MatmulPath::MMQ, 0, 0},
    {"q5_1", GenWeights::Q5_1, MatmulPath::MMQ, 0, 0}, {"q4_k", GenWeights::Q4_K, MatmulPath::MMQ, 0, 0},
    {"q5_k", GenWeights::Q5_K, MatmulPath::MMQ, 0, 0}, {"q6_k", GenWeights::Q6_K, MatmulPath::MMQ, 0, 0},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, 0, 0},
};
INSTANTIATE_TEST_SUITE_P(QuantizedTypes, FusedVsUnfused, ::testing::ValuesIn(kQuantCases),
                         [](const auto& info) { return case_name(info.param); });
// qwen3: the QK-norm folded into the rope + KV-store launch (NormRopeKv), q/k/v matvecs without
// biases, attn_output reading 2x n_embd; llama: normal-layout rope with divisors in that launch.
const Case kFamilyQuantCases[] = {
    {"q8_0", GenWeights::Q8_0, MatmulPath::MMQ, 0, 0, "qwen3-tiny"},
    {"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, 0, 0, "qwen3-tiny"},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, 0, 0, "qwen3-tiny"},
    {"q8_0", GenWeights::Q8_0, MatmulPath::MMQ, 0, 0, "llama-tiny"},
    {"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, 0, 0, "llama-tiny"},
    {"q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, 0, 0, "llama-tiny"},
};
INSTANTIATE_TEST_SUITE_P(Families, FusedVsUnfused, ::testing::ValuesIn(kFamilyQuantCases),
                         [](const auto& info) { return case_name(info.param); });

// The path of 7B's FFN down (18944 wide, past the fused prologue's limit), on the 0.5b preset with
// the limit narrowed below its 4864: the fused SwiGLU writes the down's Q8_1 row in its launch and
// the down + residual take one launch on it (mmvq_residual) where the rows stream (Q4_0, Q8_0);
// Q4_K_M's Q6_K down reads the SwiGLU's Q8_1 row in a plain matvec. Against the unfused kernels run
// eagerly, every node of every step, as FusedVsUnfused.
TEST(CudaBackend, WideFfnDownPathEqualsUnfused) {
  MINFER_REQUIRE_GPU();
  for (const Case& c : {Case{"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, 0, 0, "qwen2.5-0.5b"},
                        Case{"q8_0", GenWeights::Q8_0, MatmulPath::MMQ, 0, 0, "qwen2.5-0.5b"},
                        Case{"q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, 0, 0, "qwen2.5-0.5b"}}) {
    SCOPED_TRACE(c.weights);
    CudaOptions wide;
    wide.fused_max_input = 4096;  // the down (4864 wide) is past it; q/k/v, o and gate/up (896) are not
    expect_fused_matches_unfused(c, wide);
  }
}

// No path given: the f16 path on an sm_90 device when matmul_dequant takes every quantized
// prefill weight (0.5b Q4_0 and Q8_0: every input a multiple of 128 wide), else MMQ (the tiny
// model's narrower inputs, Q4_K_M's K-quants, any other device); a path given is kept.
TEST(CudaBackend, DefaultPrefillPathIsMatmulDequantWhereItTakesEveryWeight) {
  MINFER_REQUIRE_GPU();
  const MatmulPath f16_if_sm90 = cuda::device_is_sm90() ? MatmulPath::Float : MatmulPath::MMQ;
  struct Want {
    const char *preset, *weights;
    GenWeights gen;
    MatmulPath path;
  };
  for (const Want& c : {Want{"qwen2.5-0.5b", "q4_0", GenWeights::Q4_0, f16_if_sm90},
                        Want{"qwen2.5-0.5b", "q8_0", GenWeights::Q8_0, f16_if_sm90},
                        // Its 896-wide rows are Q5_0 (K-quants need rows of 256), which only MMQ takes.
                        Want{"qwen2.5-0.5b", "q4_k_m", GenWeights::Q4_K_M, MatmulPath::MMQ},
                        // Q4_K and Q6_K throughout (rows of 1024 and 3072).
                        Want{"qwen3-0.6b", "q4_k_m", GenWeights::Q4_K_M, f16_if_sm90},
                        Want{"tiny", "q4_0", GenWeights::Q4_0, MatmulPath::MMQ}}) {
    SCOPED_TRACE(std::string(c.preset) + " " + c.weights);
    auto path = minfer::testing::generated_model(model_tag(c.preset, c.weights), c.preset, c.gen);
    MINFER_REQUIRE_MODEL(path);
    const TinyModel t = load_tiny(path);
    EXPECT_EQ(CudaBackend(*t.m, std::nullopt).matmul_path(), c.path);
    EXPECT_EQ(CudaBackend(*t.m, MatmulPath::MMQ).matmul_path(), MatmulPath::MMQ);
  }
}

// The greedy token computed in the step (argmax on the device, graph-captured for decode) is the
// host argmax of the same logits row (lowest id on ties), at every step.
TEST(CudaBackend, GreedyTokenIsTheLogitsArgmax) {
  MINFER_REQUIRE_GPU();
  auto path = minfer::testing::generated_model("cuda-q4_0", "tiny", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(path);
  const TinyModel t = load_tiny(path);
  CudaBackend gpu(*t.m, MatmulPath::MMQ);
  ASSERT_TRUE(gpu.greedy_on_device());
  gpu.reserve_context(static_cast<int64_t>(kPrompt.size() + kDecodeInputs.size()));
  Executor ex(gpu);
  std::vector<float> logits;
  auto check = [&](const Graph& g, const StepInfo& s) {
    ex.run(g, s);
    const int32_t token = gpu.read_greedy_token(g, false);
    gpu.read_logits(g, logits);
    EXPECT_EQ(token, argmax(logits)) << "step " << s.step;
  };
  check(t.pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
  for (size_t i = 0; i < kDecodeInputs.size(); ++i)
    check(t.dec, StepInfo{Phase::Decode, static_cast<int>(i) + 1, static_cast<int>(kPrompt.size() + i), {kDecodeInputs[i]}});
}

// A prefill that no observer records puts its node outputs into one shared arena (buffers reused
// once their last reader has run, exec/buffer_plan.h); only the logits keep their own buffer.
// Its logits, greedy token and the decode steps after it must equal a recorded run's (one buffer
// per node) bit for bit: same kernels, same order. Also a one-token prefill, whose one-row nodes
// run as fused groups (the arena's lifetimes follow the groups' launches), and both prefill paths,
// for qwen3-tiny (its one-token prefill fuses the QK-norm into the rope + KV-store launch) and
// llama-tiny too.
// An observer that reads no nodes of the prefill (minfer-bench's kernel probe asks only for one
// decode step's kernel records) leaves the prefill's outputs private: the shared arena, as with
// no observer (before: one buffer per node, 41.7 GB for a 4096-token 7B prefill).
TEST(CudaBackend, APrefillWhoseNodesNobodyReadsUsesTheArena) {
  MINFER_REQUIRE_GPU();
  struct NoNodes final : Observer {
    StepRecording recording(const StepInfo&) const override {
      StepRecording r;
      r.nodes = false;
      return r;
    }
    void on_node_view(const Node&, const NodeView&) override {}
  } no_nodes;
  auto path = minfer::testing::generated_model(model_tag("tiny", "q4_0"), "tiny", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(path);
  const TinyModel t = load_tiny(path);
  auto activations = [](const Backend& b) {
    for (const auto& [what, bytes] : b.memory())
      if (what == "activations") return bytes;
    return int64_t{-1};
  };
  CudaBackend plain(*t.m, MatmulPath::MMQ), probed(*t.m, MatmulPath::MMQ);
  plain.reserve_context(static_cast<int64_t>(kPrompt.size()));
  probed.reserve_context(static_cast<int64_t>(kPrompt.size()));
  Executor ex_plain(plain), ex_probed(probed);
  ex_probed.set_observer(&no_nodes);
  ex_plain.run(t.pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
  ex_probed.run(t.pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
  EXPECT_EQ(probed.output(t.pre.node(t.pre.find("blk.0.ffn_gate"))), nullptr) << "the arena, not a buffer per node";
  EXPECT_EQ(activations(probed), activations(plain));
  std::vector<float> a, b;
  plain.read_logits(t.pre, a);
  probed.read_logits(t.pre, b);
  EXPECT_EQ(a, b);
}

TEST(CudaBackend, SharedArenaPrefillEqualsRecorded) {
  MINFER_REQUIRE_GPU();
  struct ArenaCase {
    const char* weights;
    GenWeights gen;
    MatmulPath path;
    const char* preset = "tiny";
  };
  for (const ArenaCase& c : {ArenaCase{"q4_0", GenWeights::Q4_0, MatmulPath::MMQ},
                             ArenaCase{"q8_0", GenWeights::Q8_0, MatmulPath::Float},
                             ArenaCase{"f16", GenWeights::F16, MatmulPath::MMQ},
                             ArenaCase{"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, "qwen3-tiny"},
                             ArenaCase{"q8_0", GenWeights::Q8_0, MatmulPath::Float, "qwen3-tiny"},
                             ArenaCase{"q4_0", GenWeights::Q4_0, MatmulPath::MMQ, "llama-tiny"},
                             ArenaCase{"q8_0", GenWeights::Q8_0, MatmulPath::Float, "llama-tiny"}}) {
    SCOPED_TRACE(std::string(c.preset) + " " + c.weights + " " + matmul_path_name(c.path, "cuda"));
    auto path = minfer::testing::generated_model(model_tag(c.preset, c.weights), c.preset, c.gen);
    MINFER_REQUIRE_MODEL(path);
    const TinyModel t = load_tiny(path);
    CudaBackend recorded(*t.m, c.path);
    const auto a = run_steps(t, recorded);  // with an observer: one buffer per node output
    CudaBackend plain(*t.m, c.path);
    plain.reserve_context(static_cast<int64_t>(kPrompt.size() + kDecodeInputs.size()));
    Executor ex(plain);  // no observer: the prefill's outputs are private to the step
    std::vector<float> logits;
    ex.run(t.pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
    EXPECT_EQ(plain.output(t.pre.node(t.pre.find("blk.0.ffn_gate"))), nullptr) << "a reused buffer is not readable";
    EXPECT_NE(plain.output(t.pre.nodes.back()), nullptr) << "the logits are";
    EXPECT_EQ(plain.read_greedy_token(t.pre, false), argmax(a[0].logits));
    plain.read_logits(t.pre, logits);
    EXPECT_EQ(logits, a[0].logits) << "prefill";
    for (size_t i = 0; i < kDecodeInputs.size(); ++i) {
      ex.run(t.dec, StepInfo{Phase::Decode, static_cast<int>(i) + 1, static_cast<int>(kPrompt.size() + i), {kDecodeInputs[i]}});
      plain.read_logits(t.dec, logits);
      EXPECT_EQ(logits, a[i + 1].logits) << "decode step " << i + 1;
    }
    // The activations the plans held: the arena is smaller than one buffer per node.
    auto activations = [](const Backend& b) {
      for (const auto& [what, bytes] : b.memory())
        if (what == "activations") return bytes;
      return int64_t{-1};
    };
    EXPECT_LT(activations(plain), activations(recorded));

    // One token: every node is one row, the fused groups run in the prefill too.
    const Graph one = make_graph(*t.m, Phase::Prefill, 1);
    const std::vector<int32_t> tok = {kPrompt[0]};
    CudaBackend rec1(*t.m, c.path), plain1(*t.m, c.path);
    rec1.reserve_context(1);
    plain1.reserve_context(1);
    Executor ex_rec(rec1), ex_plain(plain1);
    NodeCapture cap;
    ex_rec.set_observer(&cap);
    std::vector<float> want;
    ex_rec.run(one, StepInfo{Phase::Prefill, 0, 0, tok});
    rec1.read_logits(one, want);
    ex_plain.run(one, StepInfo{Phase::Prefill, 0, 0, tok});
    plain1.read_logits(one, logits);
    EXPECT_EQ(logits, want) << "one-token prefill";
  }
}
