#include "listing_summary.h"

#include <set>

#include "core/error.h"
#include "format/trace_keys.h"
#include "json_read.h"

using nlohmann::json;
namespace keys = minfer::trace::keys;

namespace minfer::viz {
namespace {

// Keys whose values the summary never needs; dropping them keeps memory small.
bool is_bulky_key(const std::string& key) {
  static const std::set<std::string> bulky = {
      keys::document::kGraphs, keys::v1::kPhaseGraph, keys::step::kNodes,     keys::step::kKernels,
      keys::logits::kTop,      keys::v1::kStepLogitsTop, keys::grid::kValues, keys::node_record::kGrid,
      keys::node_record::kHist, keys::document::kTimings};
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
  auto meta_it = doc.find(keys::document::kMeta);
  if (meta_it == doc.end() || !meta_it->is_object())
    fail(what, ": field '", keys::document::kMeta, "' is missing or not an object");
  const json& meta = *meta_it;
  const json& model = meta.contains(keys::meta::kModel) ? meta[keys::meta::kModel] : json();
  s.model = string_at(model, keys::model::kFile);
  s.model_name = string_at(model, keys::model::kName);
  s.architecture = string_at(model, keys::model::kArchitecture);
  s.model_sha256 = string_at(model, keys::model::kSha256);
  if (meta.contains(keys::meta::kCompare))
    s.compare_path = string_at(meta[keys::meta::kCompare], keys::compare_meta::kPath);
  s.backend = string_at(meta, keys::meta::kBackend);
  s.matmul_path = string_at(meta, keys::meta::kMatmulPath);
  s.device = string_at(meta, keys::meta::kDevice);
  s.recorded_at = string_at(meta, keys::meta::kRecordedAt);
  s.prompt = string_at(meta, keys::meta::kPrompt);
  const json& steps = array_at(doc, keys::document::kSteps, what);
  s.steps = static_cast<int64_t>(steps.size());
  for (const json& step : steps) {
    if (!step.is_object()) fail(what, ": a step is not an object");
    if (string_at(step, keys::step::kPhase) == keys::kPrefill && step.contains(keys::step::kTokens) &&
        step[keys::step::kTokens].is_array())
      s.prompt_tokens += static_cast<int64_t>(step[keys::step::kTokens].size());
    auto logits = step.find(keys::step::kLogits);
    if (logits != step.end() && logits->is_object() && logits->contains(keys::logits::kChosen) &&
        (*logits)[keys::logits::kChosen].is_number_integer() && (*logits)[keys::logits::kChosen].get<int64_t>() >= 0)
      ++s.generated_tokens;
  }
  auto complete = doc.find(keys::document::kComplete);
  s.complete = complete != doc.end() && complete->is_boolean() && complete->get<bool>();
}

// Upstream v1: model and prompt at the top level; a decode step's `token` is its input
// (the token the step before produced), the prefill's is null.
void summarize_v1(const json& doc, const std::string& what, TraceSummary& s) {
  s.model = string_at(doc, keys::v1::kModel);
  s.prompt = string_at(doc, keys::v1::kPrompt);
  s.backend = string_at(doc, keys::v1::kBackend);
  for (const json& phase : array_at(doc, keys::v1::kPhases, what)) {
    if (!phase.is_object()) fail(what, ": a phase is not an object");
    bool prefill = string_at(phase, keys::v1::kPhaseKind) == keys::kPrefill;
    for (const json& step : array_at(phase, keys::v1::kPhaseSteps, what)) {
      ++s.steps;
      if (!prefill && step.is_object() && step.contains(keys::v1::kStepToken) &&
          step[keys::v1::kStepToken].is_number_integer())
        ++s.generated_tokens;
    }
  }
  s.complete = true;  // v1 has no streaming marker: a parsed file is a whole file
}

// What a list entry keeps of a trace (meta, per step its tokens and chosen token) is small:
// 10,000 steps of a long run are about 200,000 values.
constexpr uint64_t kMaxListingValues = 4'000'000;

trace::JsonReadOptions listing_parse_options() {
  trace::JsonReadOptions o;
  o.max_values = kMaxListingValues;
  o.skip_member = [](const std::string& key, size_t) { return is_bulky_key(key); };
  return o;
}

TraceSummary summarize_doc(const json& doc, const std::string& what);

}  // namespace

TraceSummary summarize_trace(std::string_view json_text, const std::string& what) {
  return summarize_doc(trace::parse_json_text(json_text, what, listing_parse_options()), what);
}

TraceSummary summarize_trace_file(const std::string& path, const trace::ReadOptions& options) {
  trace::TraceInput in(path, options);
  return summarize_doc(trace::parse_json_stream(in, in.label(), listing_parse_options()), in.label());
}

namespace {

TraceSummary summarize_doc(const json& doc, const std::string& what) {
  if (!doc.is_object()) fail(what, ": not a JSON object");
  std::string format = string_at(doc, keys::document::kFormat);
  if (format != keys::kFormatName)
    fail(what, ": field '", keys::document::kFormat, "' is '", format, "', expected '", keys::kFormatName, "'");
  auto version = doc.find(keys::document::kVersion);
  if (version == doc.end() || !version->is_number_integer())
    fail(what, ": field '", keys::document::kVersion, "' is missing or not an integer");
  const int64_t v = version->get<int64_t>();
  if (v < 1 || v > kHighestTraceVersion)
    fail(what, ": unsupported trace version ", v, " (this server reads versions 1 to ", kHighestTraceVersion, ")");
  TraceSummary s;
  s.version = static_cast<int>(v);
  if (s.version >= 2)  // version 3 is version 2 plus optional fields
    summarize_v2(doc, what, s);
  else
    summarize_v1(doc, what, s);
  return s;
}

}  // namespace

json summary_to_json(const TraceSummary& s) {
  return json{{"version", s.version},
              {"model", s.model},
              {"model_name", s.model_name},
              {"architecture", s.architecture},
              {"model_sha256", s.model_sha256},
              {"compare_path", s.compare_path},
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
