// generate(): the prompt's prefill, then the decode steps (exec/decode_loop.h), from the parts
// each file holds: sampling one run or a lockstep pair (exec/step_sampler.h), token replay
// (exec/token_replay.h), showing tokens once their steps are safe (exec/token_display.h).
#include "exec/generate.h"

#include <chrono>

#include "core/error.h"
#include "exec/decode_loop.h"
#include "exec/step_sampler.h"
#include "exec/token_display.h"
#include "exec/token_replay.h"
#include "graph/build_graph.h"
#include "tokenizer/tokenizer.h"

namespace minfer {

double GenerateResult::decode_total_s() const {
  double s = 0;
  for (double d : decode_s) s += d;
  return s;
}
double GenerateResult::prefill_tok_s() const { return prefill_s > 0 ? prompt.size() / prefill_s : 0; }
double GenerateResult::decode_tok_s() const {
  double t = decode_total_s();
  return t > 0 ? decode_s.size() / t : 0;
}

GenerateResult generate(const Model& m, Backend& b, const Tokenizer* tok,
                        const std::vector<int32_t>& prompt, const GenerateOptions& opt,
                        Observer* obs, const std::function<void(int32_t)>& on_token) {
  using clock = std::chrono::steady_clock;
  if (prompt.empty()) fail("the prompt is empty (no tokens to prefill)");
  if (opt.n_predict < 0) fail("-n must be >= 0");
  const int64_t need = static_cast<int64_t>(prompt.size()) + opt.n_predict;
  if (static_cast<int64_t>(prompt.size()) > m.hp.n_ctx)
    fail("the prompt has ", prompt.size(), " tokens, more than the model's context of ", m.hp.n_ctx);
  b.reserve_context(std::min<int64_t>(need, m.hp.n_ctx));
  Backend* ref = opt.reference;
  if (ref) ref->reserve_context(std::min<int64_t>(need, m.hp.n_ctx));

  GenerateResult r;
  r.prompt = prompt;
  Executor ex(b, ref);
  ex.set_observer(obs);
  // Greedy without a repetition penalty: the backend's own argmax (cuda: computed in the step);
  // with nothing reading the logits, 4 bytes come back instead of the 600 KB logits row.
  const bool device_greedy = !ref && opt.sampler.temperature <= 0 && opt.sampler.repeat_penalty == 1.0f &&
                             b.greedy_on_device();
  ex.set_device_logits(device_greedy);
  StepSampler sampler(b, ref, opt.sampler, prompt, device_greedy);
  TokenReplay replay(opt.forced, r);
  TokenDisplay display(obs, on_token);

  Graph prefill = make_graph(m, Phase::Prefill, static_cast<int>(prompt.size()), opt.graph_fusion);
  // The decode graph too, before any step runs: the observer describes both up front (a trace
  // head that gains a graph after a step was written is rebuilt, ~6 ms of JSON in the first
  // decode step).
  Graph decode;
  const bool decodes = opt.n_predict > 1 && static_cast<int64_t>(prompt.size()) < m.hp.n_ctx;
  if (decodes) decode = make_graph(m, Phase::Decode, 1, opt.graph_fusion);
  if (obs) {
    obs->on_graph(prefill);
    if (decodes) obs->on_graph(decode);
  }
  StepInfo s{Phase::Prefill, 0, 0, prompt};
  auto t0 = clock::now();
  ex.run(prefill, s);
  int32_t next = sampler.sample(prefill, false);
  r.prefill_s = std::chrono::duration<double>(clock::now() - t0).count();
  sampler.report(obs, prefill, s, sampler.chosen(), r.prefill_s);
  if (opt.n_predict == 0 || !replay.left()) return r;
  const DecodeRun run{m, b, ex, obs, decode, opt, tok, sampler, replay, display, r, device_greedy};
  next = accept_token(run, next);
  display.show_due(true);
  decode_tokens(run, static_cast<int>(prompt.size()), next);
  return r;
}

}  // namespace minfer
