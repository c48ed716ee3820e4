#include "exec/generate.h"

#include <chrono>

#include "core/error.h"
#include "graph/build_qwen2.h"
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

  GenerateResult r;
  r.prompt = prompt;
  Executor ex(b);
  ex.set_observer(obs);
  Sampler sampler(opt.sampler);
  std::vector<int32_t> history = prompt;
  std::vector<float> logits;

  Graph prefill = make_graph(m, Phase::Prefill, static_cast<int>(prompt.size()));
  if (obs) obs->on_graph(prefill);
  StepInfo s{Phase::Prefill, 0, 0, prompt};
  auto t0 = clock::now();
  ex.run(prefill, s);
  b.read_logits(prefill, logits);
  int32_t next = sampler.sample(logits.data(), static_cast<int64_t>(logits.size()), history);
  r.prefill_s = std::chrono::duration<double>(clock::now() - t0).count();
  if (obs) {
    obs->on_logits(s, logits.data(), static_cast<int64_t>(logits.size()), next);
    obs->on_step_end(s, r.prefill_s);
  }
  if (opt.n_predict == 0) return r;
  r.generated.push_back(next);
  history.push_back(next);
  if (on_token) on_token(next);

  Graph decode;
  bool decode_built = false;
  int pos = static_cast<int>(prompt.size());
  while (static_cast<int>(r.generated.size()) < opt.n_predict && pos < m.hp.n_ctx) {
    if (opt.stop_at_eog && tok && tok->is_end_of_generation(next)) break;
    if (!decode_built) {
      decode = make_graph(m, Phase::Decode, 1);
      if (obs) obs->on_graph(decode);
      decode_built = true;
    }
    StepInfo ds{Phase::Decode, static_cast<int>(r.decode_s.size()) + 1, pos, {next}};
    auto a = clock::now();
    ex.run(decode, ds);
    b.read_logits(decode, logits);
    next = sampler.sample(logits.data(), static_cast<int64_t>(logits.size()), history);
    double sec = std::chrono::duration<double>(clock::now() - a).count();
    r.decode_s.push_back(sec);
    if (obs) {
      obs->on_logits(ds, logits.data(), static_cast<int64_t>(logits.size()), next);
      obs->on_step_end(ds, sec);
    }
    r.generated.push_back(next);
    history.push_back(next);
    if (on_token) on_token(next);
    ++pos;
  }
  return r;
}

}  // namespace minfer
