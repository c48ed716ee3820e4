// The paired comparison's divergence rule (first_divergent, identical) on the shared test vectors
// traces/test-vectors/paired-divergence.json; the page's pairedComparison runs the same vectors
// (web/test/divergence-vectors.test.ts), so the two implementations cannot part unnoticed.
#include <gtest/gtest.h>

#include <fstream>

#include "format/trace_check.h"
#include "trace_diff.h"

using namespace minfer::trace;
using nlohmann::json;

namespace {

json vectors() {
  std::ifstream f(std::string(MINFER_SOURCE_DIR) + "/traces/test-vectors/paired-divergence.json");
  return json::parse(f);
}

// The case's trace: the base with its patches merged (docs in the vector file's "about").
json case_trace(const json& base, const json& c) {
  json t = base;
  const json cmp = c.value("cmp", json::object()), compare = c.value("compare", json::object()),
             ref_chosen = c.value("ref_chosen", json::object());
  for (auto& [key, patch] : cmp.items()) {
    const size_t colon = key.find(':');
    const int step = std::stoi(key.substr(0, colon)), node = std::stoi(key.substr(colon + 1));
    for (json& r : t["steps"][step]["nodes"])
      if (r["id"] == node) r["cmp"].merge_patch(patch);
  }
  for (auto& [key, patch] : compare.items())
    for (auto& [k, v] : patch.items()) t["steps"][std::stoi(key)]["compare"][k] = v;  // merge_patch drops nulls
  for (auto& [key, id] : ref_chosen.items()) {
    json& l = t["steps"][std::stoi(key)]["ref_logits"];
    l["chosen"] = id;
    l["top"][0]["id"] = id;
    l["chosen_text"] = l["top"][0]["text"] = "t" + std::to_string(id.get<int>());
  }
  return t;
}

TEST(DivergenceVectors, DiffPairedGivesEveryCasesAnswer) {
  const json v = vectors();
  ASSERT_GE(v["cases"].size(), 5u);
  for (const json& c : v["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const json t = case_trace(v["base"], c);
    EXPECT_EQ(validate_trace(t), std::vector<std::string>{}) << "the case's trace is not a valid trace";
    DiffOptions o;
    o.threshold = c["threshold_db"].get<double>();
    const json d = diff_paired(t, o);
    EXPECT_EQ(d["identical"], c["expect"]["identical"]);
    const json first = d["first_divergent"].is_null() ? json(nullptr) : json::array({d["first_divergent"]["step"], d["first_divergent"]["node"]});
    EXPECT_EQ(first, c["expect"]["first_divergent"]);
  }
}

}  // namespace
