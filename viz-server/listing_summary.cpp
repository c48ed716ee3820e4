#include "listing_summary.h"

#include <set>

#include "core/error.h"

using nlohmann::json;

namespace minfer::viz {
namespace {

// Keys whose values the summary never needs; dropping them keeps memory small.
bool is_bulky_key(const std::string& key) {
  static const std::set<std::string> bulky = {"graphs", "graph",  "nodes", "kernels",
                                              "top",    "logits_top", "values", "grid",
                                              "hist",   "timings"};
  return bulky.count(key) != 0;
}

std::string string_at(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& array_at(const json& obj, const char* key, const std::string& what) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(what, ": field '", key, "' is missing");
  if (!it->is_array()) fail(what, ": field '", key, "' is not an array");
  return *it;
}

void summarize_v2(const json& doc, const std::string& what, TraceSummary& s) {
  auto meta_it = doc.find("meta");
  if (meta_it == doc.end() || !meta_it->is_object())
    fail(what, ": field 'meta' is missing or not an object");
  const json& meta = *meta_it;
  const json& model = meta.contains("model") ? meta["model"] : json();
  s.model = string_at(model, "file");
  s.model_name = string_at(model, "name");
  s.backend = string_at(meta, "backend");
  s.matmul_path = string_at(meta, "matmul_path");
  s.device = string_at(meta, "device");
  s.recorded_at = string_at(meta, "recorded_at");
  s.prompt = string_at(meta, "prompt");
  const json& steps = array_at(doc, "steps", what);
  s.steps = static_cast<int64_t>(steps.size());
  for (const json& step : steps) {
    if (!step.is_object()) fail(what, ": a step is not an object");
    if (string_at(step, "phase") == "prefill" && step.contains("tokens") &&
        step["tokens"].is_array())
      s.prompt_tokens += static_cast<int64_t>(step["tokens"].size());
    auto logits = step.find("logits");
    if (logits != step.end() && logits->is_object() && logits->contains("chosen") &&
        (*logits)["chosen"].is_number_integer() && (*logits)["chosen"].get<int64_t>() >= 0)
      ++s.generated_tokens;
  }
  auto complete = doc.find("complete");
  s.complete = complete != doc.end() && complete->is_boolean() && complete->get<bool>();
}

void summarize_v1(const json& doc, const std::string& what, TraceSummary& s) {
  for (const json& phase : array_at(doc, "phases", what)) {
    if (!phase.is_object()) fail(what, ": a phase is not an object");
    bool prefill = string_at(phase, "kind") == "prefill";
    for (const json& step : array_at(phase, "steps", what)) {
      ++s.steps;
      if (step.is_object() && step.contains("token"))
        ++(prefill ? s.prompt_tokens : s.generated_tokens);
    }
  }
  s.complete = true;  // v1 has no streaming marker: a parsed file is a whole file
}

}  // namespace

TraceSummary summarize_trace(std::string_view json_text, const std::string& what) {
  auto drop_bulky = [](int, json::parse_event_t event, json& parsed) {
    return !(event == json::parse_event_t::key && parsed.is_string() &&
             is_bulky_key(parsed.get_ref<const std::string&>()));
  };
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end(), drop_bulky);
  } catch (const json::exception& e) {
    fail(what, ": not valid JSON: ", e.what());
  }
  if (!doc.is_object()) fail(what, ": not a JSON object");
  std::string format = string_at(doc, "format");
  if (format != "minfer-trace")
    fail(what, ": field 'format' is '", format, "', expected 'minfer-trace'");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer())
    fail(what, ": field 'version' is missing or not an integer");
  TraceSummary s;
  s.version = version->get<int>();
  if (s.version == 2)
    summarize_v2(doc, what, s);
  else if (s.version == 1)
    summarize_v1(doc, what, s);
  else
    fail(what, ": unsupported trace version ", s.version, " (this server reads 1 and 2)");
  return s;
}

json summary_to_json(const TraceSummary& s) {
  return json{{"version", s.version},
              {"model", s.model},
              {"model_name", s.model_name},
              {"backend", s.backend},
              {"matmul_path", s.matmul_path},
              {"device", s.device},
              {"recorded_at", s.recorded_at},
              {"prompt", s.prompt},
              {"steps", s.steps},
              {"tokens", s.prompt_tokens + s.generated_tokens},
              {"prompt_tokens", s.prompt_tokens},
              {"generated_tokens", s.generated_tokens},
              {"complete", s.complete}};
}

}  // namespace minfer::viz
