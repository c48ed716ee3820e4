#include "cli/tokens_from.h"

#include <filesystem>

#include "format/checked_trace.h"
#include "format/trace_keys.h"
#include "core/error.h"

namespace minfer {

namespace keys = trace::keys;

ReplayTokens load_replay_tokens(const std::string& path, const std::string& model_sha256, int64_t n_vocab,
                                uint64_t max_trace_bytes) {
  const std::string what = "--tokens-from " + path;
  trace::ReadOptions ro;
  ro.label = what;
  ro.max_bytes = max_trace_bytes;
  const nlohmann::json t = trace::load_checked_trace(path, nullptr, ro);
  const nlohmann::json& model = t[keys::document::kMeta][keys::meta::kModel];
  const std::string sha = model[keys::model::kSha256].get<std::string>();
  if (sha != model_sha256)
    fail(what, ": recorded with another model (", model[keys::model::kFile].get<std::string>(), ", sha256 ", sha.substr(0, 12),
         "...; this model's sha256 is ", model_sha256.substr(0, 12), "...)");
  const nlohmann::json& steps = t[keys::document::kSteps];
  if (steps.empty()) fail(what, ": the trace has no steps (nothing to replay)");

  ReplayTokens r;
  r.file = std::filesystem::path(path).filename().string();
  r.steps = static_cast<int64_t>(steps.size());
  r.prompt_text = t[keys::document::kMeta][keys::meta::kPrompt].get<std::string>();
  auto take = [&](const nlohmann::json& id, std::vector<int32_t>& into, const std::string& where) {
    const int64_t v = id.get<int64_t>();
    if (v < 0 || v >= n_vocab) fail(what, ": ", where, ": token id ", v, " is outside the vocabulary of ", n_vocab);
    into.push_back(static_cast<int32_t>(v));
  };
  for (const auto& tok : steps[0][keys::step::kTokens]) take(tok[keys::token::kId], r.prompt, "/steps/0/tokens");
  for (size_t k = 1; k < steps.size(); ++k) {
    const auto& in = steps[k][keys::step::kTokens];
    if (in.size() != 1) fail(what, ": /steps/", k, ": a decode step with ", in.size(), " input tokens");
    take(in[0][keys::token::kId], r.generated, "/steps/" + std::to_string(k) + "/tokens/0");
  }
  const nlohmann::json& last = steps.back()[keys::step::kLogits];
  if (last.is_object() && last[keys::logits::kChosen].get<int64_t>() >= 0)
    take(last[keys::logits::kChosen], r.generated, "/steps/" + std::to_string(steps.size() - 1) + "/logits/chosen");
  return r;
}

}  // namespace minfer
