// The GPU recorder path of the CUDA backend, on the tiny preset (prefill + 6 decode steps, the
// decode steps replayed as one CUDA graph, and again eagerly; with CUPTI kernel records, and in
// a graph without them, where the last part of each step's summaries runs as a tail after it):
//  - node summaries computed on the device inside the step equal summarize_host of the same
//    node's tensor (copied after the step), at every node of every step;
//  - recording does not change what the model computes: every node output of the traced run
//    equals the untraced run bit for bit;
//  - CUPTI kernel records (when CUPTI is available): every kernel is attributed to a graph
//    node or to the recorder's summary kernels, a replayed step shows exactly the captured
//    kernels, each executed node with an output has a kernel, and the step's kernel span is
//    within the event-timed step.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "exec/executor.h"
#include "graph/build_graph.h"
#include "probes/cuda/kernel_profiler.h"
#include "probes/summarize.h"
#include "test_models.h"
#include "tiny_run.h"

using namespace minfer;

namespace {

using minfer::testing::kPrompt;
using minfer::testing::kDecodeInputs;  // teacher-forced

// Asks for device summaries (and kernels) and keeps both the summary and the full tensor.
struct Probe : Observer {
  bool record = true, kernels = true;
  SummarySpec spec{true, 4, 16, 12};
  std::vector<std::vector<float>> tensors;
  std::vector<TensorSummary> summaries;
  std::vector<StepGpuTime> gpu;
  void on_step_begin(const Graph& g, const StepInfo&) override {
    tensors.assign(g.nodes.size(), {});
    summaries.assign(g.nodes.size(), {});
  }
  StepRecording recording(const StepInfo&) const override {
    StepRecording r;
    r.summaries = record;
    r.spec = spec;
    r.kernels = kernels;
    return r;
  }
  void on_node_view(const Node& n, const NodeView& v) override {
    if (!v.out) return;
    if (record) summaries[static_cast<size_t>(n.id)] = v.out->summarize(spec);  // first: device
    tensors[static_cast<size_t>(n.id)] = v.out->to_host();
  }
  void on_gpu_time(const StepInfo&, const StepGpuTime& t) override { gpu.push_back(t); }
};

struct RunResult {
  std::vector<std::vector<std::vector<float>>> tensors;  // [step][node]
  std::vector<std::vector<TensorSummary>> summaries;
  std::vector<StepGpuTime> gpu;
};

RunResult run_steps(Backend& b, const Graph& pre, const Graph& dec, Probe& p) {
  b.reserve_context(static_cast<int64_t>(kPrompt.size() + kDecodeInputs.size()));
  Executor ex(b);
  ex.set_observer(&p);
  RunResult r;
  std::vector<float> logits;
  auto one = [&](const Graph& g, const StepInfo& s) {
    ex.run(g, s);
    b.read_logits(g, logits);
    r.tensors.push_back(p.tensors);
    r.summaries.push_back(p.summaries);
  };
  one(pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
  for (size_t i = 0; i < kDecodeInputs.size(); ++i)
    one(dec, StepInfo{Phase::Decode, static_cast<int>(i) + 1, static_cast<int>(kPrompt.size() + i), {kDecodeInputs[i]}});
  r.gpu = p.gpu;
  return r;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_summary_of(const TensorSummary& got, const std::vector<float>& t, const Node& n, const SummarySpec& spec,
                       const std::string& where) {
  const TensorSummary want = summarize_host(t.data(), n.rows(), n.cols(), spec);
  EXPECT_TRUE(same(got.stats.min, want.stats.min)) << where;
  EXPECT_TRUE(same(got.stats.max, want.stats.max)) << where;
  EXPECT_NEAR(got.stats.mean, want.stats.mean, 1e-12 * std::max(1.0, std::fabs(want.stats.mean))) << where;
  EXPECT_NEAR(got.stats.std, want.stats.std, 1e-12 * std::max(1.0, want.stats.std)) << where;
  EXPECT_EQ(got.stats.count, want.stats.count) << where;
  EXPECT_EQ(got.grid.values, want.grid.values) << where;
  EXPECT_EQ(got.hist.counts, want.hist.counts) << where;
}

struct RecordingCase {
  bool graphs, kernels;
};
class Recording : public ::testing::TestWithParam<RecordingCase> {};

TEST_P(Recording, DeviceSummariesKernelsAndUnchangedOutputs) {
  MINFER_REQUIRE_GPU();
  auto path = minfer::testing::generated_model("cuda-rec-q4_0", "tiny", GenWeights::Q4_0);
  MINFER_REQUIRE_MODEL(path);
  const bool graphs = GetParam().graphs;
  CudaOptions co;
  co.step_graphs = graphs;  // MINFER_NO_CUDA_GRAPH=1 when false
  auto m = Model::load(path);
  CudaBackend traced(*m, MatmulPath::MMQ, co), plain(*m, MatmulPath::MMQ, co);
  ASSERT_EQ(traced.step_graphs(), graphs);
  const Graph pre = make_graph(*m, Phase::Prefill, static_cast<int>(kPrompt.size()));
  const Graph dec = make_graph(*m, Phase::Decode, 1);
  Probe pt, pp;
  pt.kernels = GetParam().kernels;
  pp.record = pp.kernels = false;
  const RunResult a = run_steps(traced, pre, dec, pt);
  const RunResult b = run_steps(plain, pre, dec, pp);
  const bool cupti = traced.kernel_records_unavailable().empty();
  if (!cupti) std::printf("  CUPTI unavailable (%s): kernel checks skipped\n", traced.kernel_records_unavailable().c_str());
  ASSERT_EQ(a.gpu.size(), a.tensors.size());
  for (size_t s = 0; s < a.tensors.size(); ++s) {
    const Graph& g = s == 0 ? pre : dec;
    int recorder_kernels = 0;
    for (const KernelRecord& k : a.gpu[s].kernels) {
      if (k.node >= 0) continue;
      if (k.unattributed == "recorder: node and logits summaries") ++recorder_kernels;
      else ADD_FAILURE() << "step " << s << ": kernel " << k.name << " unattributed: " << k.unattributed;
    }
    for (const KernelRecord& k : a.gpu[s].kernels) {
      EXPECT_GE(k.start_ns, 0) << k.name;
      EXPECT_GT(k.duration_ns, 0) << k.name;
    }
    for (const Node& n : g.nodes) {
      const size_t i = static_cast<size_t>(n.id);
      EXPECT_EQ(a.tensors[s][i], b.tensors[s][i]) << "step " << s << " node " << n.name << ": recording changed the output";
      if (a.tensors[s][i].empty()) continue;
      expect_summary_of(a.summaries[s][i], a.tensors[s][i], n, pt.spec, "step " + std::to_string(s) + " node " + n.name);
    }
    if (!cupti || !pt.kernels) continue;
    // Per part of the step's summaries (cuda_dispatch.cpp forks them in at most 8 parts as the
    // step writes its nodes): one kernel for its small tensors, four for its large ones; the
    // logits summary is not asked for here.
    EXPECT_GE(recorder_kernels, 1) << "step " << s;
    EXPECT_LE(recorder_kernels, 8 * 5) << "step " << s;
    EXPECT_GE(a.gpu[s].event_ms, a.gpu[s].gpu_ms * 0.9) << "step " << s << ": kernel span exceeds the event-timed step";
    EXPECT_GT(a.gpu[s].busy_ms, 0) << "step " << s;
    EXPECT_LE(a.gpu[s].busy_ms, a.gpu[s].gpu_ms + 1e-9) << "step " << s;
    EXPECT_EQ(a.gpu[s].dropped, 0) << "step " << s;
    if (s > 0 && graphs) {
      EXPECT_EQ(static_cast<int64_t>(a.gpu[s].kernels.size()), plain.decode_kernels() + recorder_kernels)
          << "step " << s << ": a replay shows the captured kernels plus the summaries";
    }
    // Every node that has an output is computed by some kernel, its own or its fused group's.
    std::map<int, bool> covered;
    for (const KernelRecord& k : a.gpu[s].kernels) {
      covered[k.node] = true;
      for (int c : k.covers) covered[c] = true;
    }
    for (const Node& n : g.nodes) {
      if (n.executed() && n.has_output && n.op != Op::Input) {
        EXPECT_TRUE(covered[n.id]) << "step " << s << ": no kernel for node " << n.name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(GraphsAndEager, Recording,
                         ::testing::Values(RecordingCase{true, true}, RecordingCase{false, true}, RecordingCase{true, false}),
                         [](const auto& info) {
                           return std::string(info.param.graphs ? "graph" : "eager") +
                                  (info.param.kernels ? "" : "_tail_after_step");
                         });

}  // namespace
