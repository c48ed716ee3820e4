// Paired recording on the GPU (--compare-path: two CUDA backends in lockstep, A on int8 MMQ, the
// reference B on the f16 path) of the tiny model with q4_0 weights, prefill + decode steps:
//  - every executed MatMul/Logits node of every step has a local error (CudaBackend::rerun_node):
//    a quantized prefill matmul is rerun on the f16 path into scratch, every other node is its own
//    rerun (exactly 200 dB, as on the CPU);
//  - the metrics computed on the device (DeviceOutput::compare_to, outliers with B's values) equal
//    the host loops on copies of the same tensors;
//  - the layer-0 q/k/v matmuls read the same input on both paths, so their rerun IS B's output
//    bit for bit and their local error equals their full error; over the prefill's matmuls the
//    local error is on average no larger than the full one (which inherits earlier nodes');
//  - the f16 rerun agrees with the CPU's f32 GEMM of the same input (within f16 rounding) and
//    with the CPU backend's own rerun of the same node in a CPU paired run;
//  - a recorded trace carries `cmp.local` on every MatMul/Logits node-step, validates, and
//    `minfer-trace diff` names a worst local error in a matmul.
// Tolerances: device against host metrics 1e-9 relative (double sums in another order); f16
// rerun against f32 GEMM rel_l2 < 4e-3 (activations and dequantized weights rounded to f16).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "cpu/cpu_backend.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"
#include "cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "exec/generate.h"
#include "model/model.h"
#include "probes/tensor_compare.h"
#include "recorder.h"
#include "test_models.h"
#include "format/trace_check.h"
#include "trace_diff.h"
#include "format/trace_load.h"

using namespace minfer;
using nlohmann::json;

namespace {

const std::vector<int32_t> kPrompt = {9707, 11, 1879, 0, 576, 3974, 13, 758, 1124};
constexpr int kPredict = 5;

bool is_matmul(const Node& n) { return n.op == Op::MatMul || n.op == Op::Logits; }

// The layer-0 matmuls whose input is the first RMS norm of the embedding: the same on both paths.
bool reads_the_embedding_norm(const Graph& g, const Node& n) {
  if (!is_matmul(n) || n.src.empty()) return false;
  const Node& s = g.node(n.src[0]);
  return s.op == Op::RmsNorm && !s.src.empty() && g.node(s.src[0]).op == Op::GetRows;
}

// What the executor shows of each node, the metrics computed where the tensors live and the
// host copies to check them against.
struct Probe final : Observer {
  struct Rec {
    Node node;
    bool has_local = false, local_is_out = false;
    bool first_layer = false;  // reads_the_embedding_norm
    TensorCompare full, local;
    std::vector<Outlier> outliers;
    std::vector<float> out, ref, local_t, in;
  };
  std::map<std::pair<int, int>, Rec> recs;  // (step, node id)
  std::map<int, std::vector<float>> step_out;  // this step's outputs by node id (inputs of the matmuls)
  int step = 0;
  const Graph* graph = nullptr;
  CompareTolerance tol;

  StepRecording recording(const StepInfo&) const override {
    StepRecording r;
    r.summaries = true;  // device summaries, as the recorder asks
    r.outliers = 8;
    return r;
  }
  void on_step_begin(const Graph& g, const StepInfo& s) override {
    graph = &g;
    step = s.step;
    step_out.clear();
  }
  void on_node_view(const Node& n, const NodeView& v) override {
    if (!v.out) return;
    Rec r;
    r.node = n;
    r.has_local = v.local_ref != nullptr;
    r.local_is_out = v.local_ref == v.out;
    r.first_layer = reads_the_embedding_norm(*graph, n);
    // In the recorder's order: full, local, outliers with B's values.
    if (v.ref) r.full = v.out->compare_to(*v.ref, tol);
    if (v.local_ref) r.local = v.out->compare_to(*v.local_ref, tol);
    r.outliers = v.out->outliers(8, v.ref);
    r.out = v.out->to_host();
    if (v.ref) r.ref = v.ref->to_host();
    if (v.local_ref) r.local_t = v.local_ref->to_host();
    if (is_matmul(n) && step_out.count(n.src[0])) r.in = step_out.at(n.src[0]);
    step_out[n.id] = r.out;
    recs[{step, n.id}] = std::move(r);
  }
};

void run_paired(Backend& a, Backend& b, const Model& m, Observer& obs) {
  GenerateOptions g;
  g.n_predict = kPredict;
  g.stop_at_eog = false;
  g.reference = &b;
  generate(m, a, nullptr, kPrompt, g, &obs);
}

void expect_close(double got, double want, const std::string& what) {
  if (!std::isfinite(want)) {
    EXPECT_EQ(got, want) << what;
    return;
  }
  EXPECT_LE(std::fabs(got - want), 1e-9 * std::max(1.0, std::fabs(want))) << what << ": got " << got << ", want " << want;
}

void expect_metrics_of(const TensorCompare& got, const std::vector<float>& a, const std::vector<float>& b,
                       const CompareTolerance& tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  const TensorCompare want = compare_host(a.data(), b.data(), static_cast<int64_t>(a.size()), tol);
  expect_close(got.cosine, want.cosine, what + " cosine");
  expect_close(got.sqnr_db, want.sqnr_db, what + " sqnr_db");
  expect_close(got.rel_l2, want.rel_l2, what + " rel_l2");
  EXPECT_EQ(got.max_abs_diff, want.max_abs_diff) << what;
  EXPECT_EQ(got.max_abs_at, want.max_abs_at) << what;
  EXPECT_EQ(got.n_beyond, want.n_beyond) << what;
  EXPECT_EQ(got.nonfinite_mismatch, want.nonfinite_mismatch) << what;
}

class CudaPaired : public ::testing::Test {
 protected:
  void SetUp() override {
    MINFER_REQUIRE_GPU();
    path = minfer::testing::generated_model("cuda-paired-tiny-q4_0", "tiny", GenWeights::Q4_0);
    MINFER_REQUIRE_MODEL(path);
    model = Model::load(path);
  }
  std::string path;
  std::unique_ptr<Model> model;
};

}  // namespace

TEST_F(CudaPaired, EveryMatmulCarriesItsLocalErrorComputedOnTheDevice) {
  CudaBackend a(*model, MatmulPath::MMQ), b(*model, MatmulPath::Float);
  ASSERT_TRUE(a.reruns_nodes());
  Probe p;
  run_paired(a, b, *model, p);
  ThreadPool& pool = ThreadPool::global();
  size_t matmuls = 0, reruns = 0, first_layer = 0;
  double sum_local = 0, sum_full = 0;
  for (const auto& [key, r] : p.recs) {
    const Node& n = r.node;
    const std::string at = "step " + std::to_string(key.first) + " " + n.name;
    // Every node with an output has a local error: its rerun or itself.
    ASSERT_TRUE(r.has_local) << at;
    expect_metrics_of(r.full, r.out, r.ref, p.tol, at + " full");
    expect_metrics_of(r.local, r.out, r.local_t, p.tol, at + " local");
    // Outliers with B's value at each, gathered on the device.
    const std::vector<Outlier> want = outliers_host(r.out.data(), static_cast<int64_t>(r.out.size()), 8, r.ref.data());
    ASSERT_EQ(r.outliers.size(), want.size()) << at;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(r.outliers[k].index, want[k].index) << at;
      EXPECT_EQ(r.outliers[k].ref_value, want[k].ref_value) << at;
    }
    for (double v : {r.local.sqnr_db, r.local.cosine, r.local.rel_l2, r.local.max_abs_diff})
      EXPECT_TRUE(std::isfinite(v)) << at;
    EXPECT_GE(r.local.rel_l2, 0) << at;
    EXPECT_GE(r.local.max_abs_diff, 0) << at;
    if (!is_matmul(n)) {  // the same kernels on both paths
      EXPECT_TRUE(r.local_is_out) << at;
      EXPECT_EQ(r.local.sqnr_db, kSqnrCapDb) << at;
      continue;
    }
    ++matmuls;
    if (n.rows() == 1) {  // decode steps and the LM head: the same matvec on both paths
      EXPECT_TRUE(r.local_is_out) << at;
      EXPECT_EQ(r.local.sqnr_db, kSqnrCapDb) << at;
      EXPECT_EQ(r.local.max_abs_diff, 0) << at;
      continue;
    }
    // A quantized prefill matmul: rerun on the f16 path.
    ++reruns;
    EXPECT_FALSE(r.local_is_out) << at;
    EXPECT_LT(r.local.sqnr_db, kSqnrCapDb) << at;  // int8 activations against f16 ones
    sum_local += r.local.rel_l2;
    sum_full += r.full.rel_l2;
    if (r.first_layer) {  // the same input on both paths: the rerun is B's output itself
      ++first_layer;
      EXPECT_EQ(r.local_t, r.ref) << at;
      EXPECT_EQ(r.local.sqnr_db, r.full.sqnr_db) << at;
      EXPECT_EQ(r.local.rel_l2, r.full.rel_l2) << at;
      EXPECT_EQ(r.local.max_abs_diff, r.full.max_abs_diff) << at;
    }
    // The f16 rerun against the CPU's f32 GEMM of the same input and weight.
    ASSERT_FALSE(r.in.empty()) << at;
    const WeightView& w = model->weight(n.weight);
    std::vector<float> bias, y(static_cast<size_t>(n.rows() * n.cols()));
    if (!n.bias.empty()) {
      const WeightView& bw = model->weight(n.bias);
      bias.resize(static_cast<size_t>(bw.rows * bw.cols));
      cpu::weight_to_f32(bw, bias.data());
    }
    matmul_float(w.data, w.type, w.rows, w.cols, r.in.data(), n.rows(), bias.empty() ? nullptr : bias.data(), y.data(), pool);
    EXPECT_LT(minfer::testing::rel_l2(r.local_t, y), 4e-3) << at;
  }
  EXPECT_GT(matmuls, 30u);
  EXPECT_GT(reruns, 10u);
  EXPECT_EQ(first_layer, 3u);  // q, k, v of layer 0
  EXPECT_LE(sum_local, sum_full * 1.05) << "the prefill matmuls' local error, on average, above their full error";
}

// The same node rerun on the float path by the CPU backend in a CPU paired run of the same
// prompt: the layer-0 matmuls' inputs differ between the backends only by the RMS norm's
// rounding, so the two reruns (f16 GEMM on the GPU, f32 GEMM on the CPU) agree within f16
// rounding; every prefill matmul's local error (int8 activations against a float GEMM) is about
// the same on both backends.
TEST_F(CudaPaired, TheRerunAgreesWithTheCpuBackendsRerun) {
  CudaBackend ga(*model, MatmulPath::MMQ), gb(*model, MatmulPath::Float);
  CpuBackend ca(*model, MatmulPath::MMQ), cb(*model, MatmulPath::Float);
  Probe gp, cp;
  run_paired(ga, gb, *model, gp);
  run_paired(ca, cb, *model, cp);
  size_t checked = 0;
  for (const auto& [key, r] : gp.recs) {
    if (key.first != 0 || !is_matmul(r.node) || r.node.rows() == 1) continue;
    const std::string at = r.node.name;
    const Probe::Rec& c = cp.recs.at(key);
    ASSERT_TRUE(c.has_local) << at;
    ASSERT_FALSE(c.local_is_out) << at;
    if (r.first_layer) {
      EXPECT_LT(minfer::testing::rel_l2(r.local_t, c.local_t), 4e-3) << at;
    }
    // Both backends see about the same local error (the int8 rounding against a float GEMM).
    EXPECT_NEAR(r.local.sqnr_db, c.local.sqnr_db, 6.0) << at;
    ++checked;
  }
  EXPECT_EQ(checked, 14u);  // 7 matmuls in each of 2 layers
}

// Through the recorder: the trace has `cmp.local` on every MatMul/Logits node-step, validates,
// and the paired diff reports the worst local error in a matmul.
TEST_F(CudaPaired, RecordedTraceHasLocalErrorOnEveryMatmul) {
  CudaBackend a(*model, MatmulPath::MMQ), b(*model, MatmulPath::Float);
  const std::string dir = std::string(MINFER_BINARY_DIR) + "/test-tmp/cuda-paired";
  std::filesystem::create_directories(dir);
  trace::RecorderOptions o;
  o.path = dir + "/paired.json";
  const json meta = {
      {"model", {{"file", "cuda-paired-tiny-q4_0.gguf"}, {"sha256", std::string(64, 'c')}, {"architecture", "qwen2"}}},
      {"backend", "cuda"}, {"device", a.device()}, {"matmul_path", a.matmul_path_label()}, {"prompt", "p"},
      {"compare", {{"path", b.matmul_path_label()}, {"backend", "cuda"}, {"mode", "lockstep"}, {"teacher", "a"},
                   {"tolerance", {{"abs", 1e-3}, {"rel", 1e-2}}}, {"local", a.reruns_nodes()}}}};
  {
    trace::Recorder rec(o, meta, [](int32_t id) { return "t" + std::to_string(id); });
    run_paired(a, b, *model, rec);
    rec.finish({{"load_ms", 0}});
  }
  const json t = trace::load_trace(o.path);
  EXPECT_EQ(t["meta"]["compare"]["path"], "f16");
  EXPECT_EQ(t["meta"]["compare"]["local"], true);
  size_t with = 0, without = 0, rerun = 0;
  for (const auto& s : t["steps"]) {
    const json* g = nullptr;
    for (const auto& gr : t["graphs"])
      if (gr["id"] == s["graph"]) g = &gr;
    ASSERT_NE(g, nullptr);
    for (const auto& r : s["nodes"]) {
      const json& n = (*g)["nodes"][r["id"].get<size_t>()];
      if (n["op"] != "matmul" && n["op"] != "logits") continue;
      if (!r.contains("stats")) continue;  // not executed
      const bool has = r.contains("cmp") && r["cmp"].contains("local");
      (has ? with : without) += 1;
      if (has && r["cmp"]["local"]["sqnr_db"].get<double>() < 200) ++rerun;
    }
  }
  EXPECT_EQ(without, 0u);
  EXPECT_GT(with, 30u);
  EXPECT_EQ(rerun, 14u);  // the quantized prefill matmuls; every one-row matmul is exact
  EXPECT_EQ(trace::validate_trace(t), std::vector<std::string>{});
  const json d = trace::diff_paired(t);
  ASSERT_TRUE(d["worst_local"].is_object()) << d.dump();
  EXPECT_EQ(d["worst_local"]["op"], "matmul");
  EXPECT_LT(d["worst_local"]["sqnr_db"].get<double>(), 200);
  EXPECT_EQ(d["metrics_source"], "full");
}
