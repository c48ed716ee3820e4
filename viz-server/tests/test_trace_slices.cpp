// Per-step slices: the bracket scan finds each step's nodes/kernels, the index is the trace
// without them, a slice is one step's records; nlohmann reads both back to the same values.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "request_limits.h"
#include "trace_slices.h"

using nlohmann::json;
using namespace minfer::viz;

namespace {

json sample() {
  json steps = json::array();
  for (int k = 0; k < 3; ++k)
    steps.push_back({{"index", k}, {"graph", k ? "decode" : "prefill"},
                     {"tokens", {{{"id", 7 + k}, {"text", "a \"quoted\" ]}[{ text"}}}},
                     {"nodes", {{{"id", 0}, {"stats", {{"min", -k}, {"max", k}}}}, {{"id", 1}, {"no_output", "fused"}}}},
                     {"logits", {{"chosen", 40 + k}}},
                     {"kernels", json::array({{{"name", "k]"}, {"node", 0}}})}});
  return {{"format", "minfer-trace"}, {"version", 2}, {"meta", {{"prompt", "x}]"}}}, {"graphs", json::array()},
          {"steps", steps}, {"complete", true}};
}

}  // namespace

TEST(TraceSlices, IndexDropsRecordsAndSlicesKeepThem) {
  const json doc = sample();
  for (int indent : {-1, 2}) {   // compact and pretty-printed files
    const std::string text = doc.dump(indent);
    const TraceLayout layout = scan_trace_layout(text, "t.json", kDefaultMaxSteps);
    EXPECT_EQ(layout.version, 2);
    ASSERT_EQ(layout.steps.size(), 3u);
    const json index = json::parse(slice_index(text, layout));
    for (int k = 0; k < 3; ++k) {
      EXPECT_TRUE(index["steps"][k]["nodes"].is_null());
      EXPECT_TRUE(index["steps"][k]["kernels"].is_null());
      EXPECT_EQ(index["steps"][k]["logits"], doc["steps"][k]["logits"]);
      EXPECT_EQ(index["steps"][k]["tokens"], doc["steps"][k]["tokens"]);
      const json slice = json::parse(slice_step(text, layout, k));
      EXPECT_EQ(slice["step"], k);
      EXPECT_EQ(slice["nodes"], doc["steps"][k]["nodes"]);
      EXPECT_EQ(slice["kernels"], doc["steps"][k]["kernels"]);
    }
    EXPECT_EQ(index["meta"], doc["meta"]);
    EXPECT_EQ(index["complete"], true);
  }
}

TEST(TraceSlices, VersionOneAndBrokenInput) {
  EXPECT_EQ(scan_trace_layout(R"({"format":"minfer-trace","version":1,"phases":[]})", "v1.json", kDefaultMaxSteps).version, 1);
  EXPECT_THROW(scan_trace_layout(R"({"version":2,"steps":[{"nodes":[1,2)", "cut.json", kDefaultMaxSteps), minfer::Error);
  EXPECT_THROW(scan_trace_layout("[1,2]", "arr.json", kDefaultMaxSteps), minfer::Error);
  EXPECT_THROW(scan_trace_layout(R"({"version":2})", "nosteps.json", kDefaultMaxSteps), minfer::Error);
  const std::string no_nodes = R"({"version":2,"steps":[{"index":0}]})";
  const TraceLayout l = scan_trace_layout(no_nodes, "n.json", kDefaultMaxSteps);
  EXPECT_EQ(json::parse(slice_step(no_nodes, l, 0))["nodes"], json::array());
  const std::string three = R"({"version":2,"steps":[{},{},{}]})";
  EXPECT_EQ(scan_trace_layout(three, "three.json", 3).steps.size(), 3u);
  EXPECT_THROW(scan_trace_layout(three, "three.json", 2), LimitExceeded);
}

// Truncated and corrupted texts: the scan either throws minfer::Error or gives ranges inside
// the text (slicing them never reads out of bounds).
TEST(TraceSlices, CorruptTextsFailCleanly) {
  const std::string good = sample().dump(1);
  std::mt19937 rng(7);
  int errors = 0, scanned = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string t = good;
    const int kind = i % 3;
    if (kind == 0) t.resize(rng() % t.size());
    else if (kind == 1) t[rng() % t.size()] = "{}[]\",:\\ x0"[rng() % 11];
    else t.erase(rng() % t.size(), 1 + rng() % 8);
    try {
      const TraceLayout l = scan_trace_layout(t, "m.json", kDefaultMaxSteps);
      for (const auto& s : l.steps) {
        ASSERT_LE(s.nodes.first, s.nodes.second);
        ASSERT_LE(s.nodes.second, t.size());
        ASSERT_LE(s.kernels.second, t.size());
      }
      (void)slice_index(t, l);
      for (size_t k = 0; k < l.steps.size(); ++k) (void)slice_step(t, l, k);
      ++scanned;
    } catch (const minfer::Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 500);
  EXPECT_GT(scanned, 100);
}

// Issue 31, item 2 (related): a trace with two "steps" keys was sliced from the first while the
// validator and the page read the last; a trace followed by a NUL byte and junk was sliced as
// if it ended there. The scan refuses both, and keys it could misread (written with escapes).
TEST(TraceSlices, KeysTwiceEscapedKeysAndBytesAfterTheTraceAreRefused) {
  const std::string text = sample().dump();
  ASSERT_EQ(text.back(), '}');
  const std::string open = text.substr(0, text.size() - 1);
  auto error = [](const std::string& t) {
    try {
      scan_trace_layout(t, "t.json", kDefaultMaxSteps);
    } catch (const minfer::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error(open + R"(,"steps":[]})").find("t.json: the key 'steps' appears twice in one object"), std::string::npos)
      << error(open + R"(,"steps":[]})");
  std::string two_nodes = text;
  two_nodes.insert(two_nodes.find("\"nodes\":"), R"("nodes":[],)");
  EXPECT_NE(error(two_nodes).find("the key 'nodes' appears twice in one object"), std::string::npos) << error(two_nodes);
  EXPECT_NE(error(open + R"(,"st\u0065ps":[]})").find("a key written with an escape"), std::string::npos);
  EXPECT_NE(error(text + std::string(1, '\0') + "junk").find("a NUL byte after the trace's JSON object at byte " + std::to_string(text.size())),
            std::string::npos) << error(text + std::string(1, '\0') + "junk");
  EXPECT_NE(error(text + "junk").find("bytes after the trace's JSON object"), std::string::npos);
  EXPECT_EQ(error(text + "\n \n"), "(no error)");  // whitespace after it is fine
  // A top-level object of many keys (past the in-place search) is checked too.
  std::string wide = open;
  for (int i = 0; i < 40; ++i) wide += ",\"extra" + std::to_string(i) + "\":" + std::to_string(i);
  EXPECT_EQ(error(wide + "}"), "(no error)");
  EXPECT_NE(error(wide + ",\"extra33\":0}").find("the key 'extra33' appears twice"), std::string::npos);
}
