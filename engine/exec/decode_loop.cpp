#include "exec/decode_loop.h"

#include <chrono>
#include <optional>
#include <utility>

namespace minfer {

int32_t accept_token(const DecodeRun& d, int32_t picked) {
  const int32_t next = d.replay.fed(picked);
  d.r.generated.push_back(next);
  d.sampler.append(next);
  d.display.push(next);
  return next;
}

void decode_tokens(const DecodeRun& d, int pos, int32_t next) {
  using clock = std::chrono::steady_clock;
  const Model& m = d.m;
  Backend& b = d.b;
  Executor& ex = d.ex;
  Observer* obs = d.obs;
  const Graph& decode = d.decode;
  const GenerateOptions& opt = d.opt;
  GenerateResult& r = d.r;
  const bool device_greedy = d.device_greedy;
  auto report = [&](const StepInfo& s, int32_t chosen, double seconds) { d.sampler.report(obs, decode, s, chosen, seconds); };

  // A step's time runs from the previous token to its own, so what the observer costs counts.
  // A chained step launched ahead of a token that ends the generation was speculative: it is
  // dropped, never shown to the observer. A held step goes to the observer while the next runs.
  struct Launched {
    StepInfo s;
    StepRecording rec;
    int32_t chosen = -1;
    double seconds = 0;
  };
  std::optional<Launched> held;
  auto deliver = [&](Launched& l, bool previous) {
    ex.deliver(decode, l.s, l.rec, previous);
    report(l.s, l.chosen, l.seconds);
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
           !(opt.stop_at_eog && d.tok && d.tok->is_end_of_generation(next)) && d.replay.left();
  };

  auto last_token = clock::now();
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
    next = d.sampler.sample(decode, ahead.has_value());
    // The tokens read before this one: their steps went to the observer a step ago or more, so
    // they are usually safe by now and the run thread does not wait for the trace writer.
    d.display.show_due(false);
    const auto now = clock::now();
    flight->seconds = std::chrono::duration<double>(now - last_token).count();
    flight->chosen = d.sampler.chosen();
    last_token = now;
    r.decode_s.push_back(flight->seconds);
    if (ahead) {
      deliver(*flight, true);
    } else if (device_greedy && obs) {
      if (may_overlap(flight->rec)) held = std::move(flight);
      else deliver(*flight, false);
    } else {
      report(flight->s, d.sampler.chosen(), flight->seconds);
    }
    next = accept_token(d, next);
    if (!ahead && !held) d.display.show_due(true);  // its step is with the observer and nothing overlaps it
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
  d.display.show_due(true);
}

}  // namespace minfer
