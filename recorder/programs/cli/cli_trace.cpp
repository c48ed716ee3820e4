#include "cli/cli_trace.h"

#include "core/error.h"
#include "graph_json.h"
#include "recorder.h"

namespace minfer {
namespace {

class RecorderSession final : public TraceSession {
 public:
  RecorderSession(trace::RecorderOptions opts, nlohmann::json meta, const Tokenizer& tok)
      : rec_(std::move(opts), std::move(meta), [&tok](int32_t id) { return tok.token_bytes(id); }) {}
  Observer* observer() override { return rec_.observer(); }
  std::string finish(const GenerateResult& r, double load_ms) override {
    nlohmann::json decode_ms = nlohmann::json::array();
    for (double s : r.decode_s) decode_ms.push_back(s * 1e3);
    rec_.finish({{"load_ms", load_ms}, {"prefill_ms", r.prefill_s * 1e3}, {"decode_ms", decode_ms},
                 {"prefill_tok_s", r.prefill_tok_s()}, {"decode_tok_s", r.decode_tok_s()}});
    return rec_.options().path;
  }

 private:
  trace::Recorder rec_;
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
  nlohmann::json meta = run_meta(m, b, s, x);
  return std::make_unique<RecorderSession>(std::move(opts), std::move(meta), tok);
}

std::string graph_json_text(const Graph& g) { return trace::graph_to_json(g).dump(1) + "\n"; }

}  // namespace minfer
