// The recorder end to end on synthetic runs: the trace validates, the .partial is valid after
// every step, filters, gzip output, the validator's and loader's error messages, the Perfetto
// export, and the size per node-step at the Qwen2.5-0.5B shapes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "perfetto_export.h"
#include "recorder.h"
#include "synthetic.h"
#include "format/trace_check.h"
#include "test_tmp.h"
#include "format/trace_load.h"

using namespace minfer;
using namespace minfer::trace;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using minfer::trace::testing::temp_dir;

json record(const std::string& path, synth::Run run, RecorderOptions o = {}) {
  o.path = path;
  Recorder rec(o, synth::meta(), synth::token_text);
  synth::run(rec, run);
  rec.finish({{"load_ms", 12.5}, {"prefill_ms", 5.0}, {"decode_ms", {1.0, 1.0, 1.0}}});
  return load_trace(path);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + "\n";
  return s;
}

// The first error of validate_trace, which must exist.
std::string first_error(const json& t) {
  auto errs = validate_trace(t);
  return errs.empty() ? std::string("(valid)") : errs.front();
}

}  // namespace

TEST(Recorder, SyntheticRunGivesAValidCompleteTrace) {
  const std::string dir = temp_dir("basic");
  const json t = record(dir + "/t.json", synth::Run{});
  EXPECT_FALSE(fs::exists(dir + "/t.json.partial"));
  EXPECT_EQ(join(validate_trace(t)), "");
  EXPECT_EQ(t["complete"], true);
  EXPECT_EQ(t["timings"]["load_ms"], 12.5);
  // What recording cost: the run's thread, the pipeline's formatting and writing.
  const json& rec = t["timings"]["recorder"];
  for (const char* k : {"run_thread_ms", "queue_wait_ms", "final_drain_ms", "format_ms", "write_ms"})
    EXPECT_GE(rec.value(k, -1.0), 0.0) << k;
  EXPECT_GT(rec["format_ms"].get<double>(), 0.0) << "four steps were formatted";
  const json& to_disk = rec["step_to_disk_ms"];  // each step from its hand-over to its write's end
  EXPECT_GE(to_disk["p50"].get<double>(), 0.0);
  EXPECT_LE(to_disk["p50"].get<double>(), to_disk["p90"].get<double>());
  EXPECT_LE(to_disk["p90"].get<double>(), to_disk["max"].get<double>());
  ASSERT_EQ(t["graphs"].size(), 2u);
  EXPECT_EQ(t["graphs"][0]["id"], "prefill");
  EXPECT_EQ(t["graphs"][1]["id"], "decode");
  ASSERT_EQ(t["steps"].size(), 4u);
  EXPECT_EQ(t["meta"]["options"]["grid_cols"], 64);

  const json& s0 = t["steps"][0];
  EXPECT_EQ(s0["tokens"].size(), 5u);
  EXPECT_EQ(s0["tokens"][1]["text"], ",");
  EXPECT_EQ(s0["tokens"][3]["text"], "\xEF\xBF\xBD\xEF\xBF\xBD");  // partial UTF-8 made valid
  const json& g = t["graphs"][0];
  int fused = 0, kv = 0, with_grid = 0;
  for (const auto& r : s0["nodes"]) {
    const json& node = g["nodes"][r["id"].get<size_t>()];
    if (r.contains("no_output")) {
      fused += r["no_output"] == "fused";
      kv += r["no_output"] == "kv_store";
      EXPECT_FALSE(node["has_output"].get<bool>());
    } else {
      ++with_grid;
      EXPECT_EQ(r["grid"]["values"].size(), r["grid"]["rows"].get<size_t>() * r["grid"]["cols"].get<size_t>());
    }
  }
  EXPECT_EQ(fused, 2 * 5);  // 3 biases + silu + mul per layer
  EXPECT_EQ(kv, 2);
  EXPECT_GT(with_grid, 20);
  // Each decode step's input is the previous step's chosen token, at rank 0 (greedy).
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(t["steps"][i]["tokens"][0]["id"], t["steps"][i - 1]["logits"]["chosen"]);
    EXPECT_EQ(t["steps"][i - 1]["logits"]["chosen_rank"], 0);
    EXPECT_EQ(t["steps"][i]["graph"], "decode");
  }
  EXPECT_EQ(t["steps"][3]["logits"]["top"].size(), 20u);
}

// A backend's own logits summary (the CUDA device path) is written exactly as the row would be.
TEST(Recorder, SummarisedLogitsAreWrittenAsTheRowWouldBe) {
  const std::string dir = temp_dir("summarised-logits");
  synth::Run with_summary;
  with_summary.summarised_logits = true;
  const json a = record(dir + "/row.json", synth::Run{});
  const json b = record(dir + "/summary.json", with_summary);
  EXPECT_EQ(join(validate_trace(b)), "");
  ASSERT_EQ(a["steps"].size(), b["steps"].size());
  for (size_t i = 0; i < a["steps"].size(); ++i) {
    json got = b["steps"][i]["logits"];
    ASSERT_TRUE(got.contains("sampled")) << "step " << i;  // greedy: the distribution drawn from
    ASSERT_EQ(got["sampled"]["top"].size(), got["top"].size()) << "step " << i;
    for (size_t k = 0; k < got["top"].size(); ++k) {
      EXPECT_EQ(got["sampled"]["top"][k]["id"], got["top"][k]["id"]) << "step " << i;
      EXPECT_EQ(got["sampled"]["top"][k]["p"], got["top"][k]["p"]) << "step " << i;
    }
    got.erase("sampled");  // the row path of the synthetic run reports no sampler
    EXPECT_EQ(got, a["steps"][i]["logits"]) << "step " << i;
  }
}

TEST(Recorder, PartialFileIsValidAfterEveryStep) {
  const std::string dir = temp_dir("partial");
  RecorderOptions o;
  o.path = dir + "/t.json";
  Recorder rec(o, synth::meta(), synth::token_text);
  synth::Run run;
  run.n_decode = 4;
  int checked = 0;
  run.after_step = [&](int step) {
    LoadInfo li;
    const json t = load_trace(rec.partial_path(), &li);
    EXPECT_FALSE(li.salvaged);
    EXPECT_EQ(t["complete"], false);
    EXPECT_EQ(t["steps"].size(), static_cast<size_t>(step + 1));
    EXPECT_EQ(join(validate_trace(t)), "") << "after step " << step;
    ++checked;
  };
  synth::run(rec, run);
  EXPECT_EQ(checked, 5);
  EXPECT_FALSE(fs::exists(o.path));  // only finish() puts the file in place
  rec.finish(json::object());
  EXPECT_TRUE(fs::exists(o.path));
}

TEST(Recorder, NodeAndStepFiltersAndStatsOnly) {
  const std::string dir = temp_dir("filters");
  RecorderOptions o;
  o.nodes = "blk.*.attn_*,logits";
  o.steps = "0,2";
  o.stats_only = true;
  o.top_k = 3;
  const json t = record(dir + "/t.json", synth::Run{}, o);
  EXPECT_EQ(join(validate_trace(t)), "");
  for (size_t i = 0; i < t["steps"].size(); ++i) {
    const json& s = t["steps"][i];
    const bool selected = i == 0 || i == 2;
    EXPECT_EQ(s.value("nodes_skipped", false), !selected);
    EXPECT_EQ(s["nodes"].empty(), !selected);
    EXPECT_EQ(s["logits"]["top"].size(), 3u);  // logits are kept for every step
    const json& g = t["graphs"][i == 0 ? 0 : 1];
    for (const auto& r : s["nodes"]) {
      const std::string name = g["nodes"][r["id"].get<size_t>()]["name"];
      EXPECT_TRUE(name == "logits" || name.find(".attn_") != std::string::npos) << name;
      EXPECT_FALSE(r.contains("grid"));
      EXPECT_FALSE(r.contains("hist"));
    }
  }
}

TEST(Recorder, DisabledCreatesNothing) {
  const std::string dir = temp_dir("disabled");
  RecorderOptions o;  // no path
  Recorder rec(o, synth::meta(), synth::token_text);
  EXPECT_EQ(rec.observer(), nullptr);
  rec.finish(json::object());
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Recorder, GzipOutputLoadsAndBadPathIsAClearError) {
  const std::string dir = temp_dir("gzip");
  const json t = record(dir + "/t.json.gz", synth::Run{});
  LoadInfo li;
  load_trace(dir + "/t.json.gz", &li);
  EXPECT_TRUE(li.gzip);
  EXPECT_EQ(join(validate_trace(t)), "");
  RecorderOptions o;
  o.path = dir + "/no/such/dir/t.json";
  try {
    Recorder rec(o, synth::meta(), synth::token_text);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir/t.json.partial"), std::string::npos) << e.what();
  }
}

TEST(Validator, RejectsBrokenTracesWithTheirLocation) {
  const std::string dir = temp_dir("validator");
  const json good = record(dir + "/t.json", synth::Run{});
  ASSERT_EQ(join(validate_trace(good)), "");
  // Node record 6 of step 1 has a full summary (decode graph: tokens, token_embd, attn_norm, attn_q, ...).
  size_t k = 0;
  while (!good["steps"][1]["nodes"][k].contains("grid")) ++k;
  const std::string at = "/steps/1/nodes/" + std::to_string(k);
  struct Case {
    std::string what;
    std::function<void(json&)> mutate;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"grid short", [&](json& t) { t["steps"][1]["nodes"][k]["grid"]["values"].erase(0); }, at + "/grid/values: has"},
      {"node id", [&](json& t) { t["steps"][1]["nodes"].back()["id"] = 9999; }, "is not in graph 'decode'"},
      {"type", [&](json& t) { t["steps"][1]["nodes"][k]["stats"]["min"] = "x"; }, at + "/stats/min: expected number or null, got string"},
      {"hist", [&](json& t) { t["steps"][1]["nodes"][k]["hist"]["counts"][0] = 999; }, at + "/hist/counts: sum to"},
      {"rank", [&](json& t) { t["steps"][2]["logits"]["chosen_rank"] = 1; }, "/steps/2/logits/chosen_rank"},
      {"order", [&](json& t) { std::swap(t["steps"][1], t["steps"][2]); }, "/steps/1/index: is 2, expected 1"},
      {"required", [&](json& t) { t["meta"]["model"].erase("sha256"); }, "/meta/model: missing required field 'sha256'"},
      {"extra", [&](json& t) { t["steps"][0]["nodes"][2]["stats"]["median"] = 1; }, "unexpected field 'median'"},
      {"oneOf", [&](json& t) { t["steps"][0]["nodes"][2] = {{"id", 2}}; }, "matches none of the oneOf alternatives"},
      {"graph ref", [&](json& t) { t["steps"][3]["graph"] = "nope"; }, "/steps/3/graph: graph 'nope' is not in graphs[]"},
      {"complete", [&](json& t) { t.erase("timings"); }, "/timings: a complete trace has timings"},
  };
  for (const auto& c : cases) {
    json t = good;
    c.mutate(t);
    const std::string e = first_error(t);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.what << ": got '" << e << "'";
  }
}

TEST(Loader, ParseErrorsNameFileAndByteAndCutPartialsAreSalvaged) {
  const std::string dir = temp_dir("loader");
  std::ofstream(dir + "/bad.json") << "{\"format\": \"minfer-trace\", \"version\": 2, oops}";
  try {
    load_trace(dir + "/bad.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: not valid JSON at byte "), std::string::npos) << e.what();
  }
  std::ofstream(dir + "/other.json") << "{\"format\": \"something\"}";
  EXPECT_THROW(load_trace(dir + "/other.json"), Error);
  EXPECT_THROW(load_trace(dir + "/missing.json"), Error);

  // A .partial cut in the middle of its last step (what a kill during the write leaves).
  RecorderOptions o;
  o.path = dir + "/t.json";
  {
    Recorder rec(o, synth::meta(), synth::token_text);
    synth::run(rec, synth::Run{});
  }  // no finish(): the .partial stays
  const std::string partial = o.path + ".partial";
  const auto size = fs::file_size(partial);
  fs::resize_file(partial, size - 3000);
  LoadInfo li;
  const json t = load_trace(partial, &li);
  EXPECT_TRUE(li.salvaged);
  EXPECT_EQ(t["complete"], false);
  EXPECT_EQ(t["steps"].size(), 3u);  // the 4th step was cut
  EXPECT_EQ(join(validate_trace(t)), "");
}

TEST(Perfetto, StepsAndNodesAsCompleteEvents) {
  const std::string dir = temp_dir("perfetto");
  synth::Run run;
  const json t = record(dir + "/t.json", run);
  const json p = to_perfetto(t);
  int steps = 0, nodes = 0;
  for (const auto& e : p["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["dur"].get<double>(), 0);
    steps += e["tid"] == 1;
    nodes += e["tid"] == 2;
  }
  EXPECT_EQ(steps, 4);
  EXPECT_GT(nodes, 4 * 20);
}

// Bytes per node-step at the real 0.5b shapes (896 wide, FFN 4864, 151936 logits), default
// options, and the size of a 64-decode-step trace extrapolated from it (issue: < 50 MB).
TEST(TraceSize, QwenHalfBShapesStayUnder50MBFor64Steps) {
  const std::string dir = temp_dir("size");
  RecorderOptions o;
  o.path = dir + "/t.json";
  Recorder rec(o, synth::meta(), synth::token_text);
  synth::Run run;
  run.shapes = synth::Shapes::qwen05b();
  run.prompt = {9707, 11, 1879, 0, 7, 8, 9};
  run.n_decode = 3;
  std::vector<uintmax_t> sizes;
  run.after_step = [&](int) { sizes.push_back(fs::file_size(rec.partial_path())); };
  synth::run(rec, run);
  rec.finish(json::object());
  const json t = load_trace(o.path);
  ASSERT_EQ(join(validate_trace(t)), "");
  const size_t prefill_nodes = t["steps"][0]["nodes"].size(), decode_nodes = t["steps"][1]["nodes"].size();
  const double decode_step = static_cast<double>(sizes[3] - sizes[2]);
  const double prefill_step = static_cast<double>(sizes[0]);  // includes the head
  const double est64 = prefill_step + 64 * decode_step + static_cast<double>(sizes[1] - sizes[0] - decode_step);
  std::printf("[size] prefill (7 tokens, incl. head): %.0f bytes over %zu node records (%.0f B/node-step)\n",
              prefill_step, prefill_nodes, prefill_step / prefill_nodes);
  std::printf("[size] decode step: %.0f bytes over %zu node records (%.0f B/node-step)\n", decode_step,
              decode_nodes, decode_step / decode_nodes);
  std::printf("[size] estimated 0.5b trace, 7-token prompt + 64 decode steps: %.1f MB\n", est64 / 1e6);
  // The synthetic steps carry a full logits row, so their formatting includes the host's logits
  // summary (~150k exp): a CUDA step brings that summary from the device and formats faster.
  const json& cost = t["timings"]["recorder"];
  std::printf("[size] formatting %.2f ms and writing %.2f ms per step (%d steps, %d format threads)\n",
              cost["format_ms"].get<double>() / t["steps"].size(), cost["write_ms"].get<double>() / t["steps"].size(),
              static_cast<int>(t["steps"].size()), cost["format_threads"].get<int>());
  EXPECT_LT(est64, 50e6);
}
