// Pipelined recording on the CUDA backend (exec/generate.cpp): with node summaries and the
// logits summary computed on the device, the generation loop launches decode step N+1 as soon
// as N's greedy token is known and hands N to the observer while N+1 runs. On the tiny preset,
// with CUDA graphs and eagerly, the pipelined run must give what the synchronous run gives:
//  - the same tokens;
//  - at every node of every step the same summaries and outliers (both from the device, so
//    bit for bit);
//  - the device logits summary against summarize_logits of the synchronous run's logits row:
//    ids, logits and the chosen rank equal, probabilities and entropy within 1e-12 relative;
//  - callbacks in step order (begin, nodes, logits, end), and really pipelined: step N reaches
//    the observer after step N+1 was launched;
//  - the same again on the same backend after an untraced run (the traced graphs alternate
//    between two streams; the steps around them must wait for them).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "exec/generate.h"
#include "graph/build_graph.h"
#include "probes/logits_summary.h"
#include "test_models.h"
#include "tiny_run.h"

using namespace minfer;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kTopK = 20;
using minfer::testing::kPrompt;

struct StepSeen {
  int step = -1;
  Clock::time_point launched, begun;
  std::vector<TensorSummary> summaries;  // per node id
  std::vector<std::vector<Outlier>> outliers;
  LogitsSummary logits;
  bool device_logits = false;
  bool ended = false;
};

struct Log : Observer {
  bool device_logits = true;  // ask for the logits summary (pipelining needs it)
  SummarySpec spec{true, 4, 16, 12};
  std::vector<StepSeen> steps;
  StepRecording recording(const StepInfo&) const override {
    StepRecording r;
    r.nodes = r.summaries = true;
    r.spec = spec;
    r.outliers = 8;
    r.logits_top_k = device_logits ? kTopK : 0;
    return r;
  }
  void on_step_begin(const Graph& g, const StepInfo& s) override {
    if (!steps.empty()) {
      EXPECT_TRUE(steps.back().ended) << "step " << s.step << " began before the previous ended";
    }
    StepSeen st;
    st.step = s.step;
    st.launched = s.launched;
    st.begun = Clock::now();
    st.summaries.resize(g.nodes.size());
    st.outliers.resize(g.nodes.size());
    steps.push_back(std::move(st));
  }
  void on_node_view(const Node& n, const NodeView& v) override {
    if (!v.out) return;
    steps.back().summaries[static_cast<size_t>(n.id)] = v.out->summarize(spec);
    steps.back().outliers[static_cast<size_t>(n.id)] = v.out->outliers(8, nullptr);
  }
  void on_step_logits(const StepInfo&, const StepLogits& l) override {
    StepSeen& st = steps.back();
    st.device_logits = l.summary != nullptr;
    st.logits = l.summary ? *l.summary : summarize_logits(l.logits, l.n_vocab, l.chosen, kTopK);
  }
  void on_step_end(const StepInfo& s, double) override {
    EXPECT_EQ(steps.back().step, s.step);
    steps.back().ended = true;
  }
};

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Every step of two recorded runs: the same summaries and outliers at every node (bit for bit)
// and the same logits summary (probabilities and entropy within 1e-12 relative).
void expect_same_steps(const Log& pl, const Log& sl) {
  ASSERT_EQ(pl.steps.size(), sl.steps.size());
  for (size_t i = 0; i < pl.steps.size(); ++i) {
    const StepSeen &p = pl.steps[i], &s = sl.steps[i];
    SCOPED_TRACE("step " + std::to_string(i));
    for (size_t n = 0; n < p.summaries.size(); ++n) {
      const TensorSummary &x = p.summaries[n], &y = s.summaries[n];
      EXPECT_TRUE(same(x.stats.min, y.stats.min) && same(x.stats.max, y.stats.max) && same(x.stats.mean, y.stats.mean) &&
                  same(x.stats.std, y.stats.std) && x.stats.count == y.stats.count)
          << "node " << n;
      EXPECT_EQ(x.grid.values, y.grid.values) << "node " << n;
      EXPECT_EQ(x.hist.counts, y.hist.counts) << "node " << n;
      ASSERT_EQ(p.outliers[n].size(), s.outliers[n].size()) << "node " << n;
      for (size_t k = 0; k < p.outliers[n].size(); ++k) {
        EXPECT_EQ(p.outliers[n][k].index, s.outliers[n][k].index) << "node " << n;
        EXPECT_EQ(p.outliers[n][k].value, s.outliers[n][k].value) << "node " << n;
      }
    }
    const LogitsSummary &x = p.logits, &y = s.logits;
    EXPECT_EQ(x.chosen, y.chosen);
    EXPECT_EQ(x.chosen_rank, y.chosen_rank);
    EXPECT_NEAR(x.chosen_p, y.chosen_p, 1e-12 * y.chosen_p);
    EXPECT_NEAR(x.entropy, y.entropy, 1e-12 * y.entropy);
    EXPECT_EQ(x.nonfinite, y.nonfinite);
    ASSERT_EQ(x.top.size(), y.top.size());
    for (size_t k = 0; k < x.top.size(); ++k) {
      EXPECT_EQ(x.top[k].id, y.top[k].id) << "top " << k;
      EXPECT_EQ(x.top[k].logit, y.top[k].logit) << "top " << k;
      EXPECT_NEAR(x.top[k].p, y.top[k].p, 1e-12 * y.top[k].p) << "top " << k;
    }
  }
}

class Pipelined : public ::testing::TestWithParam<bool> {};  // param: CUDA graphs on

TEST_P(Pipelined, GivesWhatTheSynchronousRunGives) {
  MINFER_REQUIRE_GPU();
  auto path = minfer::testing::generated_model("cuda-rec-q4_0", "tiny", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(path);
  CudaOptions co;
  co.step_graphs = GetParam();  // MINFER_NO_CUDA_GRAPH=1 when false
  auto m = Model::load(path);
  CudaBackend pb(*m, MatmulPath::MMQ, co), sb(*m, MatmulPath::MMQ, co);
  GenerateOptions opt;
  opt.n_predict = 12;
  opt.stop_at_eog = false;
  Log pl, sl;
  sl.device_logits = false;
  const GenerateResult a = generate(*m, pb, nullptr, kPrompt, opt, &pl);
  const GenerateResult b = generate(*m, sb, nullptr, kPrompt, opt, &sl);
  ASSERT_EQ(a.generated, b.generated);
  ASSERT_EQ(pl.steps.size(), sl.steps.size());
  ASSERT_EQ(pl.steps.size(), static_cast<size_t>(opt.n_predict));  // prefill + 11 decode steps
  for (size_t i = 0; i < pl.steps.size(); ++i) {
    const StepSeen& p = pl.steps[i];
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_EQ(p.step, static_cast<int>(i));
    EXPECT_TRUE(p.ended);
    if (i > 0) {
      EXPECT_TRUE(p.device_logits) << "a decode step's logits summary comes from the device";
    }
    EXPECT_FALSE(sl.steps[i].device_logits);
    // Step N goes to the observer after step N+1 was launched (not for the last step).
    if (i > 0 && i + 1 < pl.steps.size()) {
      EXPECT_GT(p.begun, pl.steps[i + 1].launched) << "not pipelined";
    }
  }
  expect_same_steps(pl, sl);
  // The same backend again, after an untraced run on it: the switches between the traced
  // graphs' two lanes and everything else (eager prefill after an alternating step, untraced
  // graph, alternating again) keep every result.
  const GenerateResult u = generate(*m, pb, nullptr, kPrompt, opt, nullptr);
  EXPECT_EQ(u.generated, a.generated);
  Log again;
  const GenerateResult c = generate(*m, pb, nullptr, kPrompt, opt, &again);
  EXPECT_EQ(c.generated, a.generated);
  expect_same_steps(again, pl);
}

INSTANTIATE_TEST_SUITE_P(CudaGraphs, Pipelined, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? std::string("graphs") : std::string("eager"); });

}  // namespace

namespace {

// Untraced greedy decoding chains its steps: step N+1 takes N's argmax on the device and is
// launched before the host reads it. MINFER_CUDA_CHAIN=0 feeds every token from the host.
TEST_P(Pipelined, ChainedStepsGiveTheHostFedTokens) {
  MINFER_REQUIRE_GPU();
  auto path = minfer::testing::generated_model("cuda-rec-q4_0", "tiny", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(path);
  CudaOptions co;
  co.step_graphs = GetParam();  // MINFER_NO_CUDA_GRAPH=1 when false
  auto m = Model::load(path);
  CudaBackend chained(*m, MatmulPath::MMQ, co);
  co.chain = false;  // MINFER_CUDA_CHAIN=0
  CudaBackend fed(*m, MatmulPath::MMQ, co);
  ASSERT_TRUE(chained.chains_greedy_token());
  ASSERT_FALSE(fed.chains_greedy_token());
  GenerateOptions opt;
  opt.n_predict = 24;
  opt.stop_at_eog = false;
  const GenerateResult a = generate(*m, chained, nullptr, kPrompt, opt, nullptr);
  const GenerateResult b = generate(*m, fed, nullptr, kPrompt, opt, nullptr);
  EXPECT_EQ(a.generated, b.generated);
  EXPECT_EQ(a.generated.size(), 24u);
  // A second generation on the same backend (a new prompt after a chained run) starts clean.
  const GenerateResult c = generate(*m, chained, nullptr, kPrompt, opt, nullptr);
  EXPECT_EQ(c.generated, a.generated);
}

TEST(Chained, NeedsAOneTokenStepOfTheSameGraphJustBefore) {
  MINFER_REQUIRE_GPU();
  auto path = minfer::testing::generated_model("cuda-rec-q4_0", "tiny", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(path);
  auto m = Model::load(path);
  CudaBackend b(*m, MatmulPath::MMQ);
  b.reserve_context(64);
  const Graph pre = make_graph(*m, Phase::Prefill, static_cast<int>(kPrompt.size()));
  const Graph dec = make_graph(*m, Phase::Decode, 1);
  b.run_step(pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
  StepInfo s{Phase::Decode, 1, static_cast<int>(kPrompt.size()), {-1}};
  s.token_on_device = true;
  EXPECT_THROW(b.run_step(dec, s), Error) << "the prefill's argmax is not in the decode step's plan";
  s.token_on_device = false;
  s.tokens = {b.read_greedy_token(pre, false)};
  b.run_step(dec, s);
  StepInfo t{Phase::Decode, 2, s.pos0 + 1, {-1}};
  t.token_on_device = true;
  b.run_step(dec, t);
  const int32_t first = b.read_greedy_token(dec, true), second = b.read_greedy_token(dec, false);
  // The same two steps fed from the host.
  CudaBackend h(*m, MatmulPath::MMQ);
  h.reserve_context(64);
  h.run_step(pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
  h.run_step(dec, StepInfo{Phase::Decode, 1, s.pos0, {h.read_greedy_token(pre, false)}});
  EXPECT_EQ(h.read_greedy_token(dec, false), first);
  h.run_step(dec, StepInfo{Phase::Decode, 2, s.pos0 + 1, {first}});
  EXPECT_EQ(h.read_greedy_token(dec, false), second);
}

}  // namespace
