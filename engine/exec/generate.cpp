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

namespace {

// One run's sampler over its logits: the penalized logits it drew from and its pick.
struct Draw {
  std::vector<float> penalized;
  int32_t chosen = -1;
};

Draw draw(Sampler& s, const std::vector<float>& logits, const std::vector<int32_t>& history) {
  Draw d;
  d.penalized = s.penalized(logits.data(), static_cast<int64_t>(logits.size()), history);
  d.chosen = s.pick(d.penalized);
  return d;
}

// penalized is empty when the draw used the logits as they are (greedy, no penalty).
SampledLogits sampled_of(const Draw& d, const std::vector<float>& logits, const SamplerOptions& o) {
  return {d.penalized.empty() ? logits.data() : d.penalized.data(), o.temperature, o.repeat_penalty};
}

}  // namespace

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
  // The reference's sampler has the same settings and seed and sees the same history, so it
  // makes the same random draws: its pick is what the reference path would have chosen.
  Sampler sampler(opt.sampler), ref_sampler(opt.sampler);
  std::vector<int32_t> history = prompt;
  std::vector<float> logits, ref_logits;

  Draw a_draw, ref_draw;
  // Greedy without a repetition penalty: the backend's own argmax (cuda: computed in the step);
  // with nothing reading the logits, 4 bytes come back instead of the 600 KB logits row.
  const bool device_greedy = !ref && opt.sampler.temperature <= 0 && opt.sampler.repeat_penalty == 1.0f &&
                             b.greedy_on_device();
  // Reads the step's logits and samples (both runs); returns this run's pick.
  auto sample_step = [&](const Graph& g) {
    if (device_greedy) {
      a_draw.penalized.clear();  // the draw is from the logits as they are
      a_draw.chosen = b.read_greedy_token(g);
      if (obs) b.read_logits(g, logits);
      return a_draw.chosen;
    }
    b.read_logits(g, logits);
    a_draw = draw(sampler, logits, history);
    if (ref) {
      ref->read_logits(g, ref_logits);
      ref_draw = draw(ref_sampler, ref_logits, history);
    }
    return a_draw.chosen;
  };
  auto report = [&](const StepInfo& s, double seconds) {
    if (!obs) return;
    StepLogits l;
    l.logits = logits.data();
    l.n_vocab = static_cast<int64_t>(logits.size());
    l.chosen = a_draw.chosen;
    l.sampled = sampled_of(a_draw, logits, opt.sampler);
    if (ref) {
      l.ref_logits = ref_logits.data();
      l.ref_chosen = ref_draw.chosen;
      l.ref_sampled = sampled_of(ref_draw, ref_logits, opt.sampler);
    }
    obs->on_step_logits(s, l);
    obs->on_step_end(s, seconds);
  };
  // The token fed after `picked`: the forced one when teacher-forced.
  auto fed = [&](int32_t picked) { return opt.forced ? (*opt.forced)[r.generated.size()] : picked; };
  auto forced_left = [&] {
    const bool left = !opt.forced || r.generated.size() < opt.forced->size();
    if (!left) r.forced_ran_out = true;
    return left;
  };

  Graph prefill = make_graph(m, Phase::Prefill, static_cast<int>(prompt.size()));
  if (obs) obs->on_graph(prefill);
  StepInfo s{Phase::Prefill, 0, 0, prompt};
  auto t0 = clock::now();
  ex.run(prefill, s);
  int32_t next = sample_step(prefill);
  r.prefill_s = std::chrono::duration<double>(clock::now() - t0).count();
  report(s, r.prefill_s);
  if (opt.n_predict == 0 || !forced_left()) return r;
  next = fed(next);
  r.generated.push_back(next);
  history.push_back(next);
  if (on_token) on_token(next);

  Graph decode;
  bool decode_built = false;
  int pos = static_cast<int>(prompt.size());
  while (static_cast<int>(r.generated.size()) < opt.n_predict && pos < m.hp.n_ctx) {
    if (opt.stop_at_eog && tok && tok->is_end_of_generation(next)) break;
    if (!forced_left()) break;
    if (!decode_built) {
      decode = make_graph(m, Phase::Decode, 1);
      if (obs) obs->on_graph(decode);
      decode_built = true;
    }
    StepInfo ds{Phase::Decode, static_cast<int>(r.decode_s.size()) + 1, pos, {next}};
    auto a = clock::now();
    ex.run(decode, ds);
    next = sample_step(decode);
    double sec = std::chrono::duration<double>(clock::now() - a).count();
    r.decode_s.push_back(sec);
    report(ds, sec);
    next = fed(next);
    r.generated.push_back(next);
    history.push_back(next);
    if (on_token) on_token(next);
    ++pos;
  }
  return r;
}

}  // namespace minfer
