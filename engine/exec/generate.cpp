#include "exec/generate.h"

#include <chrono>
#include <optional>
#include <utility>

#include "core/error.h"
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
  ex.set_device_logits(device_greedy);
  // Reads the step's logits (or only its greedy token) and samples (both runs); returns this
  // run's pick. previous: the step launched before the last one (its greedy token only).
  auto sample_step = [&](const Graph& g, bool previous) {
    if (device_greedy) {
      a_draw.penalized.clear();  // the draw is from the logits as they are
      a_draw.chosen = b.read_greedy_token(g, previous);
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
  // The step's logits to the observer, then its end. A device-greedy step reads them now: the
  // backend's summary when it computed one, else the row.
  auto report = [&](const Graph& g, const StepInfo& s, int32_t chosen, double seconds) {
    if (!obs) return;
    StepLogits l;
    l.chosen = chosen;
    std::optional<LogitsSummary> summary;
    if (device_greedy) {
      summary = b.probes().read_logits_summary(g);
      if (!summary) b.read_logits(g, logits);
    }
    if (summary) {
      l.summary = &*summary;
      l.n_vocab = summary->n_vocab;
      l.sampled = {nullptr, opt.sampler.temperature, opt.sampler.repeat_penalty};
    } else {
      l.logits = logits.data();
      l.n_vocab = static_cast<int64_t>(logits.size());
      l.sampled = sampled_of(a_draw, logits, opt.sampler);
    }
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
  int32_t next = sample_step(prefill, false);
  r.prefill_s = std::chrono::duration<double>(clock::now() - t0).count();
  report(prefill, s, a_draw.chosen, r.prefill_s);
  if (opt.n_predict == 0 || !forced_left()) return r;
  // Tokens read but not shown yet, oldest first. A token is shown only once its step is safe with
  // the observer (a trace: on disk). show_due shows them all when every step handed to the
  // observer is safe: at once if it already is (Observer::caught_up), else it waits (flush) only
  // when told to or when more than kMaxUnshown are behind; otherwise they wait for the next call.
  // The loop calls it where every unshown token's step has been handed over.
  constexpr size_t kMaxUnshown = 2;
  std::vector<int32_t> unshown;
  auto show_due = [&](bool wait) {
    if (unshown.empty()) return;
    if (obs) {
      if (wait || unshown.size() > kMaxUnshown) obs->flush();
      else if (!obs->caught_up()) return;
    }
    if (on_token)
      for (int32_t t : unshown) on_token(t);
    unshown.clear();
  };
  next = fed(next);
  r.generated.push_back(next);
  history.push_back(next);
  unshown.push_back(next);
  show_due(true);

  // Decode. A step's time runs from the previous token to its own, so what the observer costs
  // counts. Two ways a step overlaps the next one:
  //  - chained: when the backend takes a step's token straight from the previous step's argmax
  //    on the device (Backend::chains_greedy_token), step N+1 is launched before N's token is
  //    read, so the device never waits for the host between steps. If N's token ends the
  //    generation, N+1 was speculative: it is dropped, never shown to the observer.
  //  - held: when the backend keeps a step's recorded results in host memory past the next
  //    launch (BackendProbes::keeps_step_results), step N+1 is launched as soon as N's greedy token is
  //    known and N goes to the observer while N+1 runs.
  struct Launched {
    StepInfo s;
    StepRecording rec;
    int32_t chosen = -1;
    double seconds = 0;
  };
  std::optional<Launched> held;
  auto deliver = [&](Launched& l, bool previous) {
    ex.deliver(decode, l.s, l.rec, previous);
    report(decode, l.s, l.chosen, l.seconds);
  };
  const bool chain = device_greedy && !opt.forced && b.chains_greedy_token();
  // Whether a step recorded so may overlap the next (launched before it reaches the observer).
  auto may_overlap = [&](const StepRecording& rec) { return b.probes().keeps_step_results(rec) && !rec.step_by_step; };
  // The decode step at `pos` fed `token` (token_on_device: the last launched step's pick, not
  // read yet), with what the observer will read of it.
  auto plan = [&](int32_t token, int pos, int step, bool token_on_device) {
    Launched l;
    l.s = StepInfo{Phase::Decode, step, pos, {token}};
    l.s.token_on_device = token_on_device;
    l.rec = ex.recording(l.s);
    return l;
  };
  // Launches a planned step; a held step goes to the observer around the launch.
  auto launch = [&](Launched l) {
    l.s.launched = clock::now();
    // The held step's results must survive this launch: same recording, kept by the backend.
    if (held && !(held->rec == l.rec)) {
      deliver(*held, false);
      held.reset();
    }
    if (device_greedy && obs) {  // launch now, deliver after the token (or later)
      ex.launch(decode, l.s, l.rec);
      if (held) {
        deliver(*held, true);
        held.reset();
      }
    } else {
      ex.run(decode, l.s);
    }
    return l;
  };
  auto may_decode = [&](int pos) {
    return static_cast<int>(r.generated.size()) < opt.n_predict && pos < m.hp.n_ctx &&
           !(opt.stop_at_eog && tok && tok->is_end_of_generation(next)) && forced_left();
  };

  auto last_token = clock::now();
  int pos = static_cast<int>(prompt.size());
  std::optional<Launched> flight;  // launched, its token not read yet
  if (may_decode(pos)) flight = launch(plan(next, pos, 1, false));
  while (flight) {
    // Chain the next step when it will run unless this one's token ends the generation, and
    // when this step's results survive its launch (same recording, kept by the backend).
    std::optional<Launched> ahead;
    if (chain && static_cast<int>(r.generated.size()) + 1 < opt.n_predict && pos + 1 < m.hp.n_ctx) {
      Launched next_step = plan(-1, pos + 1, flight->s.step + 1, true);
      if (!obs || (next_step.rec == flight->rec && may_overlap(flight->rec)))
        ahead = launch(std::move(next_step));
    }
    next = sample_step(decode, ahead.has_value());
    // The tokens read before this one: their steps went to the observer a step ago or more, so
    // they are usually safe by now and the run thread does not wait for the trace writer.
    show_due(false);
    const auto now = clock::now();
    flight->seconds = std::chrono::duration<double>(now - last_token).count();
    flight->chosen = a_draw.chosen;
    last_token = now;
    r.decode_s.push_back(flight->seconds);
    if (ahead) {
      deliver(*flight, true);
    } else if (device_greedy && obs) {
      if (may_overlap(flight->rec)) held = std::move(flight);
      else deliver(*flight, false);
    } else {
      report(decode, flight->s, a_draw.chosen, flight->seconds);
    }
    next = fed(next);
    r.generated.push_back(next);
    history.push_back(next);
    unshown.push_back(next);
    if (!ahead && !held) show_due(true);  // its step is with the observer and nothing overlaps it
    ++pos;
    flight.reset();
    if (!may_decode(pos)) break;  // a chained step, if any, was speculative: dropped
    if (ahead) {
      ahead->s.tokens[0] = next;  // read now: what the observer is shown
      flight = std::move(ahead);
    } else {
      flight = launch(plan(next, pos, static_cast<int>(r.decode_s.size()) + 1, false));
    }
  }
  if (held) deliver(*held, false);
  show_due(true);
  return r;
}

}  // namespace minfer
