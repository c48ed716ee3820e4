// A live run (minfer-viz --model) and the CLI (`minfer --trace`) write one trace contract: for the
// same model and options their traces carry the same `meta`, and what a live run streams to the
// page is what its trace file holds (issue 28, item 1: each was built twice, and the copies had
// drifted).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cli/run_cli.h"
#include "viz_live_fixture.h"

namespace minfer::viz::test {
namespace {

// The run's settings, as the page sends them and as the CLI's flags.
const json kRunBody = {{"prompt", "hi"}, {"max_tokens", 2}, {"temperature", 0}, {"top_k", 40},
                       {"top_p", 0.95},  {"repeat_penalty", 1.1}, {"seed", 1}, {"backend", "cpu"},
                       {"matmul_path", "mmq"}};

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// Every key path of a JSON object ("model.hparams.n_vocab"), arrays as leaves.
void key_paths(const json& j, const std::string& at, std::set<std::string>& out) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = at.empty() ? it.key() : at + "." + it.key();
    out.insert(p);
    key_paths(it.value(), p, out);
  }
}

std::set<std::string> key_paths(const json& j) {
  std::set<std::string> out;
  key_paths(j, "", out);
  return out;
}

class VizLiveContract : public VizLiveFixture {
 protected:
  json live_trace(std::string* events = nullptr);
};

// Runs kRunBody live and returns the saved trace; `events` gets the run's event stream.
json VizLiveContract::live_trace(std::string* events) {
  auto cli = client();
  auto r = cli.Post("/api/run", {{"Origin", "http://127.0.0.1:" + std::to_string(server->port())}},
                    kRunBody.dump(), "application/json");
  if (!r || r->status != 202) {
    ADD_FAILURE() << "start: " << (r ? r->body : httplib::to_string(r.error()));
    return json();
  }
  const json started = json::parse(r->body);
  std::string stream;
  httplib::Client ev = client();
  ev.Get("/api/run/events?id=" + std::to_string(started["id"].get<int>()), [&](const char* data, size_t n) {
    stream.append(data, n);
    return true;
  });
  EXPECT_NE(stream.find("event: done\n"), std::string::npos) << stream.substr(0, 2000);
  if (events) *events = stream;
  return read_json(traces.path() / started["trace"].get<std::string>());
}

// The same run through the CLI, in this process.
json cli_trace(const std::string& model, const fs::path& out) {
  std::vector<std::string> args = {"minfer", model, kRunBody["prompt"], "-n", "2", "--temp", "0", "--top-k", "40",
                                   "--top-p", "0.95", "--repeat-penalty", "1.1", "--seed", "1", "--backend", "cpu",
                                   "--quiet", "--trace", out.string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_EQ(run_cli(static_cast<int>(argv.size()), argv.data()), 0);
  return read_json(out);
}

TEST_F(VizLiveContract, LiveRunAndCliWriteTheSameMeta) {
  const json live = live_trace();
  ASSERT_TRUE(live.is_object());
  TempDir d("cli-meta");
  const json cli = cli_trace(model, d.path() / "cli.json");
  json a = live["meta"], b = cli["meta"];
  // What a live run adds: its mark. When each was recorded differs by nature.
  EXPECT_EQ(a["live_run"], true);
  for (json* m : {&a, &b}) {
    m->erase("live_run");
    m->erase("recorded_at");
  }
  std::set<std::string> only_live, only_cli;
  const auto ka = key_paths(a), kb = key_paths(b);
  std::set_difference(ka.begin(), ka.end(), kb.begin(), kb.end(), std::inserter(only_live, only_live.end()));
  std::set_difference(kb.begin(), kb.end(), ka.begin(), ka.end(), std::inserter(only_cli, only_cli.end()));
  EXPECT_EQ(only_live, std::set<std::string>{}) << "meta keys only the live run writes";
  EXPECT_EQ(only_cli, std::set<std::string>{}) << "meta keys the live run lacks";
  EXPECT_EQ(a, b) << "live: " << a.dump(1) << "\ncli: " << b.dump(1);
}

// The stream's events of one type, parsed ("event: T\ndata: {...}\n\n").
std::vector<json> events_of(const std::string& stream, const std::string& type) {
  std::vector<json> out;
  const std::string head = "event: " + type + "\ndata: ";
  for (size_t at = stream.find(head); at != std::string::npos; at = stream.find(head, at + 1)) {
    const size_t b = at + head.size();
    out.push_back(json::parse(stream.substr(b, stream.find('\n', b) - b)));
  }
  return out;
}

// Every node event is the trace's node record (step_json.h), statistics only, with its step.
TEST_F(VizLiveContract, NodeEventsAreTheTraceFilesNodeRecords) {
  std::string stream;
  const json t = live_trace(&stream);
  ASSERT_TRUE(t.is_object());
  std::map<std::pair<int, int>, json> events;
  for (const json& e : events_of(stream, "node")) events[{e["step"].get<int>(), e["id"].get<int>()}] = e;
  int compared = 0, with_stats = 0;
  for (const json& step : t["steps"])
    for (const json& rec : step["nodes"]) {
      const auto key = std::make_pair(step["index"].get<int>(), rec["id"].get<int>());
      const auto it = events.find(key);
      if (it == events.end()) {
        // The executor does not report fused-away nodes; the recorder marks them itself.
        EXPECT_EQ(rec.value("no_output", ""), "fused") << "no event for step " << key.first << " node " << key.second;
        continue;
      }
      for (auto f = it->second.begin(); f != it->second.end(); ++f)
        if (f.key() != "step")
          EXPECT_EQ(f.value(), rec[f.key()]) << "step " << key.first << " node " << key.second << " field " << f.key();
      EXPECT_EQ(it->second.contains("stats"), rec.contains("stats")) << "step " << key.first << " node " << key.second;
      with_stats += rec.contains("stats");
      ++compared;
    }
  EXPECT_GT(with_stats, 10);
  EXPECT_EQ(compared, static_cast<int>(events.size())) << "node events the trace has no record for";
}

// Every token event is the trace's logits of the step: the chosen token, its probability and the
// first entries of the top-k, as the one softmax/top-k rule (probes/logits_summary.h) gives them.
TEST_F(VizLiveContract, TokenEventsAreTheTraceFilesLogits) {
  std::string stream;
  const json t = live_trace(&stream);
  ASSERT_TRUE(t.is_object());
  const auto tokens = events_of(stream, "token");
  ASSERT_EQ(tokens.size(), t["steps"].size());
  for (const json& e : tokens) {
    const json& lg = t["steps"][e["step"].get<size_t>()]["logits"];
    EXPECT_EQ(e["id"], lg["chosen"]);
    EXPECT_EQ(e["text"], lg["chosen_text"]);
    EXPECT_EQ(e["p"], lg["chosen_p"]) << "step " << e["step"];
    ASSERT_EQ(e["top"].size(), 5u);
    for (size_t i = 0; i < e["top"].size(); ++i) {
      EXPECT_EQ(e["top"][i]["id"], lg["top"][i]["id"]) << "step " << e["step"] << " entry " << i;
      EXPECT_EQ(e["top"][i]["text"], lg["top"][i]["text"]) << "step " << e["step"] << " entry " << i;
      EXPECT_EQ(e["top"][i]["p"], lg["top"][i]["p"]) << "step " << e["step"] << " entry " << i;
    }
  }
}

}  // namespace
}  // namespace minfer::viz::test
