#include "cli/trace_session.h"

#include <filesystem>

#include "core/error.h"
#include "recorder.h"
#include "step_journal.h"

namespace minfer {
namespace {

class RecorderSession final : public TraceSession {
 public:
  RecorderSession(trace::RecorderOptions opts, nlohmann::json meta, const Tokenizer& tok)
      : rec_(std::make_unique<trace::Recorder>(std::move(opts), std::move(meta),
                                               [&tok](int32_t id) { return tok.token_bytes(id); })) {}
  Observer* observer() override { return rec_->observer(); }
  std::string finish(const GenerateResult& r, std::optional<double> load_ms) override {
    nlohmann::json decode_ms = nlohmann::json::array();
    for (double s : r.decode_s) decode_ms.push_back(s * 1e3);
    nlohmann::json timings = {{"prefill_ms", r.prefill_s * 1e3}, {"decode_ms", decode_ms},
                              {"prefill_tok_s", r.prefill_tok_s()}, {"decode_tok_s", r.decode_tok_s()}};
    if (load_ms) timings["load_ms"] = *load_ms;
    rec_->finish(timings);
    return rec_->options().path;
  }
  void discard() override {
    const std::string partial = rec_->partial_path();
    rec_.reset();  // its threads stop and its files close before they are removed
    if (partial.empty()) return;
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    std::filesystem::remove(trace::journal_path_for(partial), ec);
  }

 private:
  std::unique_ptr<trace::Recorder> rec_;
};

}  // namespace

std::unique_ptr<TraceSession> TraceSession::maybe_start(const CliOptions& o, const Environment& env, const Model& m,
                                                        const Backend& b, const Tokenizer& tok,
                                                        const TraceExtras& x) {
  std::vector<std::string> args = o.trace_args;
  auto opts = trace::RecorderOptions::from_env_and_args(env, args);
  if (!args.empty()) fail("unknown option '", args[0], "'");
  return start(std::move(opts), o, m, b, tok, x);
}

std::unique_ptr<TraceSession> TraceSession::start(trace::RecorderOptions opts, const CliOptions& o, const Model& m,
                                                  const Backend& b, const Tokenizer& tok, const TraceExtras& x) {
  if (!opts.enabled()) return nullptr;
  RunSettings s{o.model, o.sampler, o.n_predict, opts.kernel_steps};
  s.digest_cache_dir = o.digest_cache_dir;
  return start(std::move(opts), run_meta(m, b, s, x), tok);
}

std::unique_ptr<TraceSession> TraceSession::start(trace::RecorderOptions opts, nlohmann::json meta, const Tokenizer& tok) {
  return std::make_unique<RecorderSession>(std::move(opts), std::move(meta), tok);
}

}  // namespace minfer
