// Paired recording end to end on a generated tiny model (two CPU backends in lockstep, the
// recorder, the v3 schema): every `cmp`, local error, outlier list, block-scale summary, step KL
// and sampled distribution in the trace is checked against a plain recomputation from the full
// tensors of a second, identical run (the CPU backend is deterministic). Also: the local error
// of a non-matmul node is 0 and of an MMQ prefill matmul is not; KL(A||A) = 0 and a trace
// paired with its own path is "identical" for minfer-trace diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "exec/generate.h"
#include "format/json_schema.h"
#include "model/model.h"
#include "recorder.h"
#include "test_tmp.h"
#include "tests/test_models.h"
#include "format/trace_check.h"
#include "trace_diff.h"
#include "format/trace_load.h"

using namespace minfer;
using namespace minfer::trace;
using nlohmann::json;

namespace {

const std::vector<int32_t> kPrompt = {9707, 11, 1879, 0, 7, 100, 200, 300, 4000};
constexpr float kPenalty = 1.3f;
constexpr int kPredict = 6;

// Full tensors of every node, as the executor shows them.
struct Capture final : Observer {
  struct NodeData {
    std::vector<float> out, ref, local, act;
    int block = 0;
  };
  std::map<std::pair<int, int>, NodeData> nodes;  // (step, node id)
  std::map<int, std::vector<float>> logits, ref_logits, penalized;
  std::map<int, std::pair<int32_t, int32_t>> chosen;  // A's and B's picks
  int step = 0;

  void on_step_begin(const Graph&, const StepInfo& s) override { step = s.step; }
  void on_node_view(const Node& n, const NodeView& v) override {
    if (!v.out) return;
    NodeData d;
    d.out = v.out->to_host();
    if (v.ref) d.ref = v.ref->to_host();
    if (v.local_ref) d.local = v.local_ref->to_host();
    if (v.activation) d.act = v.activation->to_host();
    d.block = v.activation_block;
    nodes[{step, n.id}] = std::move(d);
  }
  void on_step_logits(const StepInfo& s, const StepLogits& l) override {
    logits[s.step].assign(l.logits, l.logits + l.n_vocab);
    ref_logits[s.step].assign(l.ref_logits, l.ref_logits + l.n_vocab);
    penalized[s.step].assign(l.sampled.logits, l.sampled.logits + l.n_vocab);
    chosen[s.step] = {l.chosen, l.ref_chosen};
  }
};

json meta_for(const Backend& a, const Backend& b) {
  return {{"model", {{"file", "paired-tiny.gguf"}, {"sha256", std::string(64, 'c')}, {"architecture", "qwen2"}}},
          {"backend", "cpu"}, {"device", "test"}, {"matmul_path", a.matmul_path_label()}, {"prompt", "p"},
          {"compare", {{"path", b.matmul_path_label()}, {"backend", "cpu"}, {"mode", "lockstep"}, {"teacher", "a"},
                       {"tolerance", {{"abs", 1e-3}, {"rel", 1e-2}}}, {"local", a.probes().reruns_nodes()}}}};
}

// A paired greedy run of kPrompt, A on path pa, the reference on pb.
void run(const Model& m, MatmulPath pa, MatmulPath pb, Observer& obs) {
  CpuBackend a(m, pa), b(m, pb);
  GenerateOptions g;
  g.n_predict = kPredict;
  g.stop_at_eog = false;
  g.sampler.repeat_penalty = kPenalty;
  g.reference = &b;
  generate(m, a, nullptr, kPrompt, g, &obs);
}

json record(const Model& m, MatmulPath pa, MatmulPath pb, const std::string& file) {
  RecorderOptions o;
  o.path = file;
  const CpuBackend a(m, pa), b(m, pb);  // for the meta's labels
  Recorder rec(o, meta_for(a, b), [](int32_t id) { return "t" + std::to_string(id); });
  run(m, pa, pb, rec);
  rec.finish({{"load_ms", 0}});
  return load_trace(file);
}

// Plain metrics of a against the reference b (long double; the trace keeps 6 digits).
struct Plain {
  double sqnr_db, cosine, rel_l2, max_abs;
  int64_t max_at, beyond;
};
Plain plain(const std::vector<float>& a, const std::vector<float>& b) {
  long double ab = 0, aa = 0, bb = 0, ee = 0, mx = 0;
  int64_t at = -1, beyond = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const long double x = a[i], y = b[i], d = std::fabs(x - y);
    ab += x * y, aa += x * x, bb += y * y, ee += (x - y) * (x - y);
    if (at < 0 || d > mx) mx = d, at = static_cast<int64_t>(i);
    beyond += d > 1e-3L + 1e-2L * std::fabs(y);
  }
  const double sqnr = ee == 0 ? 200.0 : std::clamp(static_cast<double>(10 * std::log10(bb / ee)), -200.0, 200.0);
  return {sqnr, static_cast<double>(ab / std::sqrt(aa * bb)), static_cast<double>(std::sqrt(ee / bb)),
          static_cast<double>(mx), at, beyond};
}

void expect_6digits(const json& got, double want, const std::string& what) {
  ASSERT_TRUE(got.is_number()) << what << ": " << got;
  EXPECT_NEAR(got.get<double>(), want, 2e-5 * std::max(std::fabs(want), 1e-6) + 1e-9) << what;
}

void expect_metrics(const json& got, const Plain& p, const std::string& what) {
  expect_6digits(got["sqnr_db"], p.sqnr_db, what + " sqnr_db");
  expect_6digits(got["cosine"], p.cosine, what + " cosine");
  expect_6digits(got["rel_l2"], p.rel_l2, what + " rel_l2");
  expect_6digits(got["max_abs_diff"], p.max_abs, what + " max_abs_diff");
}

const json& graph_of(const json& t, const json& step) {
  for (const auto& g : t["graphs"])
    if (g["id"] == step["graph"]) return g;
  throw std::runtime_error("no graph");
}

class PairedTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    path = minfer::testing::generated_model("paired-tiny", "tiny", GenWeights::Q8_0);
    MINFER_REQUIRE_MODEL(path);
    model = Model::load(path);
    dir = minfer::trace::testing::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string path, dir;
  std::unique_ptr<Model> model;
};

}  // namespace

TEST_F(PairedTrace, RecordedMetricsMatchARecomputationFromTheFullTensors) {
  const json t = record(*model, MatmulPath::MMQ, MatmulPath::Float, dir + "/paired.json");
  Capture cap;
  run(*model, MatmulPath::MMQ, MatmulPath::Float, cap);

  ASSERT_EQ(t["version"], 3);
  ASSERT_EQ(t["steps"].size(), static_cast<size_t>(kPredict));
  size_t compared = 0, scales = 0;
  for (const auto& s : t["steps"]) {
    const int si = s["index"];
    const json& g = graph_of(t, s);
    for (const auto& r : s["nodes"]) {
      if (!r.contains("stats")) continue;
      const int id = r["id"];
      const std::string name = g["nodes"][static_cast<size_t>(id)]["name"], op = g["nodes"][static_cast<size_t>(id)]["op"];
      const std::string at = "step " + std::to_string(si) + " " + name;
      const auto& d = cap.nodes.at({si, id});
      const int64_t cols = g["nodes"][static_cast<size_t>(id)]["shape"][1];
      ASSERT_TRUE(r.contains("cmp") && r.contains("ref")) << at;
      const Plain full = plain(d.out, d.ref), local = plain(d.out, d.local);
      expect_metrics(r["cmp"], full, at + " cmp");
      expect_metrics(r["cmp"]["local"], local, at + " local");
      EXPECT_EQ(r["cmp"]["n_beyond"], full.beyond) << at;
      if (full.max_abs > 0)
        EXPECT_EQ(r["cmp"]["max_abs_at"], json::array({full.max_at / cols, full.max_at % cols})) << at;
      else
        EXPECT_TRUE(r["cmp"]["max_abs_at"].is_null()) << at;
      ++compared;

      // The local error: 0 for every op the paths share; an MMQ prefill matmul rounds its
      // activation to 8 bits, the f32 path does not. (One-row matmuls, the decode steps' and
      // the prefill's logits of the last row, take the same quantized GEMV on both paths.)
      const bool prefill_matmul = (op == "matmul" || op == "logits") && g["nodes"][static_cast<size_t>(id)]["shape"][0] > 1;
      if (prefill_matmul) {
        EXPECT_GT(local.max_abs, 0) << at;
        EXPECT_LT(r["cmp"]["local"]["sqnr_db"].get<double>(), 200) << at;
      } else {
        EXPECT_EQ(local.max_abs, 0) << at;
        EXPECT_EQ(r["cmp"]["local"]["sqnr_db"], 200) << at;
      }

      // Outliers: the 8 largest |x|, lower index first on ties, with B's value there.
      std::vector<int64_t> idx(d.out.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) {
        return std::fabs(d.out[static_cast<size_t>(i)]) > std::fabs(d.out[static_cast<size_t>(j)]);
      });
      const auto& o = r["outliers"];
      ASSERT_EQ(o.size(), std::min<size_t>(8, d.out.size())) << at;
      for (size_t k = 0; k < o.size(); ++k) {
        EXPECT_EQ(o[k]["row"].get<int64_t>() * cols + o[k]["col"].get<int64_t>(), idx[k]) << at << " outlier " << k;
        expect_6digits(o[k]["ref_value"], d.ref[static_cast<size_t>(idx[k])], at + " ref_value");
      }

      // Block scales of the activation, where the kernel quantizes it (every matmul on the MMQ
      // path, and the decode GEMV on any path).
      if (op == "matmul" || op == "logits") {
        ASSERT_TRUE(r.contains("act_scales")) << at;
        ASSERT_EQ(d.block, 32) << at;  // Q8_0 weights take Q8_0 activations
        const int64_t in_cols = static_cast<int64_t>(d.act.size()) / g["nodes"][static_cast<size_t>(id)]["shape"][0].get<int64_t>();
        std::vector<double> sc;
        for (size_t b = 0; b < d.act.size(); b += 32) {
          double amax = 0;
          for (size_t k = b; k < b + 32; ++k) amax = std::max(amax, static_cast<double>(std::fabs(d.act[k])));
          sc.push_back(amax / 127);
        }
        EXPECT_EQ(in_cols % 32, 0);
        EXPECT_EQ(r["act_scales"]["blocks"], sc.size()) << at;
        expect_6digits(r["act_scales"]["max"], *std::max_element(sc.begin(), sc.end()), at + " act max");
        expect_6digits(r["act_scales"]["mean"], std::accumulate(sc.begin(), sc.end(), 0.0) / sc.size(), at + " act mean");
        ++scales;
      } else {
        EXPECT_FALSE(r.contains("act_scales")) << at;
      }
    }

    // The step: KL(A||B) over the full vocabulary, the picks, the sampled distribution.
    const auto& la = cap.logits.at(si);
    const auto& lb = cap.ref_logits.at(si);
    const double ma = *std::max_element(la.begin(), la.end()), mb = *std::max_element(lb.begin(), lb.end());
    long double za = 0, zb = 0;
    for (size_t i = 0; i < la.size(); ++i) za += std::exp(la[i] - ma), zb += std::exp(lb[i] - mb);
    long double kl = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      const long double pa = std::exp(la[i] - ma) / za, pb = std::exp(lb[i] - mb) / zb;
      kl += pa * std::log(pa / pb);
    }
    expect_6digits(s["compare"]["kl"], static_cast<double>(kl), "step " + std::to_string(si) + " kl");
    EXPECT_EQ(s["compare"]["chosen_differs"], cap.chosen.at(si).first != cap.chosen.at(si).second);
    EXPECT_EQ(s["logits"]["chosen"], cap.chosen.at(si).first);
    EXPECT_EQ(s["ref_logits"]["chosen"], cap.chosen.at(si).second);

    // sampled = softmax of the logits after the repetition penalty (greedy: temperature 1),
    // penalized here from the step's history as the sampler documents it.
    std::vector<int32_t> history = kPrompt;
    for (int k = 1; k <= si; ++k) history.push_back(t["steps"][static_cast<size_t>(k)]["tokens"][0]["id"]);
    std::vector<double> pen(la.begin(), la.end());
    for (int32_t id : std::set<int32_t>(history.begin(), history.end()))
      pen[static_cast<size_t>(id)] = pen[static_cast<size_t>(id)] > 0 ? pen[static_cast<size_t>(id)] / kPenalty
                                                                       : pen[static_cast<size_t>(id)] * kPenalty;
    const size_t top = static_cast<size_t>(std::max_element(pen.begin(), pen.end()) - pen.begin());
    double z = 0;
    for (double v : pen) z += std::exp(v - pen[top]);
    const json& sm = s["logits"]["sampled"];
    expect_6digits(sm["repeat_penalty"], kPenalty, "repeat_penalty");
    EXPECT_EQ(sm["top"][0]["id"], top);
    expect_6digits(sm["top"][0]["p"], 1 / z, "sampled top p");
    EXPECT_EQ(s["logits"]["chosen"], top);  // greedy picks the penalized argmax
  }
  EXPECT_GT(compared, 100u);
  EXPECT_GT(scales, 10u);
}

TEST_F(PairedTrace, ValidatesAgainstTheV3SchemaFile) {
  const json t = record(*model, MatmulPath::MMQ, MatmulPath::Float, dir + "/paired.json");
  EXPECT_EQ(validate_trace(t), std::vector<std::string>{});
  const SchemaValidator v3(load_json_file(std::string(MINFER_SOURCE_DIR) + "/traces/schema/minfer-trace-v3.schema.json"));
  EXPECT_EQ(v3.validate(t), std::vector<std::string>{});
  // v2 does not know the new fields: the kept v2 schema refuses a v3 file.
  const SchemaValidator v2(load_json_file(std::string(MINFER_SOURCE_DIR) + "/traces/schema/minfer-trace-v2.schema.json"));
  EXPECT_FALSE(v2.validate(t).empty());
  // A broken comparison is caught by the consistency checks.
  json bad = t;
  bad["steps"][0]["compare"]["chosen_differs"] = !bad["steps"][0]["compare"]["chosen_differs"].get<bool>();
  for (auto& r : bad["steps"][0]["nodes"])
    if (r.contains("cmp")) {
      r["cmp"]["max_abs_at"] = json::array({999, 0});
      break;
    }
  const auto errs = validate_trace(bad);
  ASSERT_GE(errs.size(), 2u);
  EXPECT_NE(errs[0].find("max_abs_at"), std::string::npos) << errs[0];
  EXPECT_NE(errs[1].find("chosen_differs"), std::string::npos) << errs[1];
}

TEST_F(PairedTrace, PairedWithItsOwnPathIsIdenticalWithZeroKl) {
  const json t = record(*model, MatmulPath::MMQ, MatmulPath::MMQ, dir + "/self.json");
  for (const auto& s : t["steps"]) {
    EXPECT_EQ(s["compare"]["kl"], 0);
    EXPECT_EQ(s["compare"]["chosen_differs"], false);
    for (const auto& r : s["nodes"])
      if (r.contains("cmp")) {
        EXPECT_EQ(r["cmp"]["sqnr_db"], 200);
        EXPECT_EQ(r["cmp"]["max_abs_diff"], 0);
        EXPECT_TRUE(r["cmp"]["max_abs_at"].is_null());
      }
  }
  const json d = diff_paired(t);
  EXPECT_EQ(d["metrics_source"], "full");
  EXPECT_EQ(d["identical"], true);
  EXPECT_TRUE(d["first_divergent"].is_null());
  EXPECT_TRUE(d["worst_local"].is_null());
}

TEST_F(PairedTrace, DiffNamesTheFirstNodeUnderTheThresholdAndTheWorstLocalError) {
  const json t = record(*model, MatmulPath::MMQ, MatmulPath::Float, dir + "/paired.json");
  DiffOptions o;
  o.threshold = 60;  // the tiny model's errors sit around 35-50 dB
  const json d = diff_paired(t, o);
  EXPECT_EQ(d["metrics_source"], "full");
  EXPECT_EQ(d["identical"], false);
  // Recomputed from the trace: the first record in execution order under 60 dB, and the lowest
  // local SQNR.
  json first = nullptr, worst = nullptr;
  double worst_db = 200;
  for (const auto& s : t["steps"])
    for (const auto& r : s["nodes"]) {
      if (!r.contains("cmp")) continue;
      if (first.is_null() && r["cmp"]["sqnr_db"].get<double>() < 60) first = {s["index"], r["id"]};
      if (r["cmp"]["local"]["sqnr_db"].get<double>() < worst_db)
        worst_db = r["cmp"]["local"]["sqnr_db"], worst = {s["index"], r["id"]};
    }
  ASSERT_FALSE(first.is_null());
  ASSERT_FALSE(worst.is_null());
  EXPECT_EQ(json::array({d["first_divergent"]["step"], d["first_divergent"]["node"]}), first);
  EXPECT_EQ(json::array({d["worst_local"]["step"], d["worst_local"]["node"]}), worst);
  EXPECT_EQ(d["worst_local"]["sqnr_db"].get<double>(), worst_db);
  for (const auto& s : d["steps"]) EXPECT_EQ(s["inputs_agree"], true);
  // A trace that is not paired is refused by name.
  json plain_trace = t;
  plain_trace["meta"].erase("compare");
  EXPECT_THROW(diff_paired(plain_trace), Error);
}
