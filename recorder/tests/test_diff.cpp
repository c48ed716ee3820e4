// Run comparison on synthetic traces with known injected errors: the first divergent node and
// its SQNR against a hand computation, identical nodes, refusals of mismatched runs, and the
// minfer-trace tool's exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "recorder.h"
#include "synthetic.h"
#include "format/checked_trace.h"
#include "trace_diff.h"
#include "test_tmp.h"
#include "format/trace_load.h"

using namespace minfer;
using namespace minfer::trace;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using minfer::trace::testing::temp_dir;

json record(const std::string& path, const synth::Run& run, const json& meta = synth::meta()) {
  RecorderOptions o;
  o.path = path;
  Recorder rec(o, meta, synth::token_text);
  synth::run(rec, run);
  rec.finish({{"load_ms", 1.0}});
  return load_trace(path);
}

// Scales a node's values at one step: error = (f - 1) * x, so SQNR = -20 log10|f - 1|.
synth::Run scaled(const std::vector<std::tuple<int, std::string, float>>& changes) {
  synth::Run r;
  r.perturb = [changes](int step, const Node& n, std::vector<float>& v) {
    for (const auto& [s, name, f] : changes)
      if (s == step && n.name == name)
        for (auto& x : v) x *= f;
  };
  return r;
}

const json* node_record(const json& trace, size_t step, const std::string& name) {
  const json& g = trace["graphs"][step == 0 ? 0 : 1];
  for (const auto& r : trace["steps"][step]["nodes"])
    if (g["nodes"][r["id"].get<size_t>()]["name"] == name) return &r;
  return nullptr;
}

const json* diff_node(const json& d, size_t step, const std::string& name) {
  for (const auto& n : d["steps"][step]["nodes"])
    if (n["name"] == name) return &n;
  return nullptr;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Diff, FindsTheFirstDivergentNodeWithTheHandComputedSqnr) {
  const std::string dir = temp_dir("diff");
  const json a = record(dir + "/a.json", synth::Run{});
  // 60 dB at blk.0.attn_q (under the threshold's radar), 20 dB at blk.1.attn_output, both in
  // the prefill; 10 dB later at step 2.
  const json b = record(dir + "/b.json", scaled({{0, "blk.0.attn_q", 1.001f},
                                                 {0, "blk.1.attn_output", 1.1f},
                                                 {2, "blk.0.ffn_down", 1.0f + 1.0f / std::sqrt(10.0f)}}),
                        synth::meta(std::string(64, 'a'), "f16"));
  const json d = diff(a, b);

  ASSERT_FALSE(d["first_divergent"].is_null());
  EXPECT_EQ(d["first_divergent"]["step"], 0);
  EXPECT_EQ(d["first_divergent"]["name"], "blk.1.attn_output");
  EXPECT_EQ(d["a"]["matmul_path"], "mmq");
  EXPECT_EQ(d["b"]["matmul_path"], "f16");

  // Hand computation from the two recorded grids.
  const json* ra = node_record(a, 0, "blk.1.attn_output");
  const json* rb = node_record(b, 0, "blk.1.attn_output");
  ASSERT_TRUE(ra && rb);
  double sa = 0, se = 0;
  for (size_t i = 0; i < (*ra)["grid"]["values"].size(); ++i) {
    const double x = (*ra)["grid"]["values"][i], y = (*rb)["grid"]["values"][i];
    sa += x * x;
    se += (x - y) * (x - y);
  }
  const double hand = 10 * std::log10(sa / se);
  EXPECT_NEAR(hand, 20.0, 0.01);  // -20 log10(0.1), up to 6-digit rounding
  EXPECT_NEAR(d["first_divergent"]["sqnr_db"].get<double>(), hand, 1e-3);
  EXPECT_NEAR(diff_node(d, 0, "blk.0.attn_q")->at("sqnr_db").get<double>(), 60.0, 0.1);
  EXPECT_NEAR(diff_node(d, 2, "blk.0.ffn_down")->at("sqnr_db").get<double>(), 10.0, 0.01);
  EXPECT_NEAR(diff_node(d, 0, "blk.1.attn_output")->at("rel_err")["absmean"].get<double>(), 0.1 / 1.1, 1e-4);

  const json* same = diff_node(d, 1, "blk.1.ffn_down");
  EXPECT_EQ(same->at("sqnr_db"), kSqnrCapDb);
  EXPECT_EQ(same->at("cosine"), 1.0);
  EXPECT_EQ(same->at("max_abs_diff"), 0.0);
  EXPECT_EQ(d["token_agreement"], 1.0);
  EXPECT_EQ(d["steps"][1]["kl_topk"], 0.0);
  EXPECT_EQ(d["steps"].size(), 4u);
  EXPECT_FALSE(d["op_times"].empty());

  // A higher bar finds the 60 dB node first; a looser one only the step-2 node.
  DiffOptions strict;
  strict.threshold = 70;
  EXPECT_EQ(diff(a, b, strict)["first_divergent"]["name"], "blk.0.attn_q");
  DiffOptions loose;
  loose.threshold = 15;
  const json dl = diff(a, b, loose);
  EXPECT_EQ(dl["first_divergent"]["step"], 2);
  EXPECT_EQ(dl["first_divergent"]["name"], "blk.0.ffn_down");
  DiffOptions cos;
  cos.metric = "cosine";
  cos.threshold = 0.999999;
  EXPECT_EQ(diff(a, b, cos)["first_divergent"].is_null(), true);  // scaling keeps the direction
}

TEST(Diff, NanOnOneSideIsADivergenceAndTokensDisagreeingCount) {
  const std::string dir = temp_dir("diff_nan");
  const json a = record(dir + "/a.json", synth::Run{});
  synth::Run r;
  r.perturb = [](int step, const Node& n, std::vector<float>& v) {
    if (step == 1 && n.name == "blk.0.ffn_swiglu") v[0] = std::nanf("");
  };
  const json b = record(dir + "/b.json", r);
  const json d = diff(a, b);
  EXPECT_EQ(d["first_divergent"]["step"], 1);
  EXPECT_EQ(d["first_divergent"]["name"], "blk.0.ffn_swiglu");
  EXPECT_EQ(d["first_divergent"]["sqnr_db"], -kSqnrCapDb);

  // A different chosen token at step 1 lowers agreement to 3/4.
  json b2 = a;
  b2["steps"][1]["logits"]["chosen"] = 1;
  EXPECT_NEAR(diff(a, b2)["token_agreement"].get<double>(), 0.75, 1e-9);
  EXPECT_EQ(diff(a, b2)["steps"][1]["agree"], false);
}

// A run whose input token differs at step 2 (after a different choice at step 1): steps 2 and
// later have other inputs, also step 3 whose token happens to match again, and no "first
// divergent node" is named from them.
TEST(Diff, InputsDisagreeFromTheFirstDifferentTokenOn) {
  const std::string dir = temp_dir("diff_inputs");
  const json a = record(dir + "/a.json", synth::Run{});
  json b = a;
  b["steps"][2]["tokens"] = json::array({12345});
  for (auto& r : b["steps"][2]["nodes"])  // everything in step 2 differs because its input does
    if (r.contains("grid"))
      for (auto& v : r["grid"]["values"])
        if (v.is_number()) v = v.get<double>() * 2.0 + 1.0;
  const json d = diff(a, b);
  EXPECT_EQ(d["steps"][0]["inputs_agree"], true);
  EXPECT_EQ(d["steps"][1]["inputs_agree"], true);
  EXPECT_EQ(d["steps"][2]["inputs_agree"], false);
  EXPECT_EQ(d["steps"][3]["inputs_agree"], false);  // same token again, but another KV cache
  EXPECT_TRUE(d["first_divergent"].is_null()) << d["first_divergent"].dump();
}

TEST(Diff, RefusesDifferentModelsGraphsAndPrompts) {
  const std::string dir = temp_dir("diff_refuse");
  const json a = record(dir + "/a.json", synth::Run{});
  const json other_model = record(dir + "/m.json", synth::Run{}, synth::meta(std::string(64, 'b')));
  EXPECT_NE(error_of([&] { diff(a, other_model); }).find("different models"), std::string::npos);
  synth::Run deeper;
  deeper.shapes.n_layer = 3;
  const json other_graph = record(dir + "/g.json", deeper);
  EXPECT_NE(error_of([&] { diff(a, other_graph); }).find("different graphs"), std::string::npos);
  synth::Run prompt;
  prompt.prompt = {1, 2, 3, 4, 5};
  const json other_prompt = record(dir + "/p.json", prompt);
  EXPECT_NE(error_of([&] { diff(a, other_prompt); }).find("different prompts"), std::string::npos);
  DiffOptions bad;
  bad.metric = "psnr";
  EXPECT_NE(error_of([&] { diff(a, a, bad); }).find("unknown metric"), std::string::npos);
}

// Issue 31, item 7: minfer-viz stops a comparison whose client left. Every stage that takes
// the time (reading and parsing, the schema check, the diff) stops at a set flag with
// Cancelled, not an Error; without a flag (the CLI) or with a clear one nothing changes.
TEST(Diff, ASetCancelFlagStopsTheReadTheValidationAndTheDiff) {
  const std::string dir = temp_dir("diff_cancel");
  const json a = record(dir + "/a.json", synth::Run{});
  const json b = record(dir + "/b.json", scaled({{1, "blk.1.attn_q", 1.5f}}));
  CancelFlag clear{false}, set{true};
  ReadOptions read;
  read.cancel = &clear;
  EXPECT_EQ(load_checked_trace(dir + "/a.json", nullptr, read), a);
  DiffOptions o;
  o.cancel = &clear;
  EXPECT_EQ(diff(a, b, o), diff(a, b));

  read.cancel = &set;
  EXPECT_THROW(load_trace(dir + "/a.json", nullptr, read), Cancelled);
  EXPECT_THROW(require_valid_trace(a, "a.json", &set), Cancelled);
  o.cancel = &set;
  EXPECT_THROW(diff(a, b, o), Cancelled);
}

TEST(Tool, ExitCodesAndJsonOutput) {
  const std::string dir = temp_dir("tool");
  record(dir + "/a.json", synth::Run{});
  record(dir + "/b.json", scaled({{1, "blk.1.attn_q", 1.5f}}));
  const std::string tool = MINFER_TRACE_TOOL;
  auto run = [&](const std::string& args) {
    const int rc = std::system((tool + " " + args + " > " + dir + "/out.txt 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  EXPECT_EQ(run("validate " + dir + "/a.json"), 0);
  EXPECT_EQ(run("summary " + dir + "/a.json"), 0);
  EXPECT_EQ(run("diff " + dir + "/a.json " + dir + "/b.json --json -o " + dir + "/d.json"), 0);
  const json d = load_json_file(dir + "/d.json");
  EXPECT_EQ(d["first_divergent"]["name"], "blk.1.attn_q");
  EXPECT_EQ(run("export-perfetto " + dir + "/a.json -o " + dir + "/p.json"), 0);
  EXPECT_TRUE(load_json_file(dir + "/p.json").contains("traceEvents"));

  std::ofstream(dir + "/broken.json") << "{\"format\":\"minfer-trace\",\"version\":2,\"complete\":true}";
  EXPECT_EQ(run("validate " + dir + "/broken.json"), 1);
  std::ifstream out(dir + "/out.txt");
  const std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("missing required field 'meta'"), std::string::npos) << text;
  EXPECT_EQ(run("validate " + dir + "/nope.json"), 1);
  EXPECT_EQ(run("frobnicate"), 2);
}
