#include "exec/step_sampler.h"

#include <optional>

namespace minfer {

StepSampler::StepSampler(Backend& b, Backend* ref, const SamplerOptions& o, const std::vector<int32_t>& prompt,
                         bool device_greedy)
    : b_(b), ref_(ref), opt_(o), device_greedy_(device_greedy), sampler_(o), ref_sampler_(o), history_(prompt) {}

StepSampler::Draw StepSampler::draw(Sampler& s, const std::vector<float>& logits, const std::vector<int32_t>& history) {
  Draw d;
  d.penalized = s.penalized(logits.data(), static_cast<int64_t>(logits.size()), history);
  d.chosen = s.pick(d.penalized);
  return d;
}

// penalized is empty when the draw used the logits as they are (greedy, no penalty).
SampledLogits StepSampler::sampled_of(const Draw& d, const std::vector<float>& logits) const {
  return {d.penalized.empty() ? logits.data() : d.penalized.data(), opt_.temperature, opt_.repeat_penalty};
}

int32_t StepSampler::sample(const Graph& g, bool previous) {
  if (device_greedy_) {
    a_draw_.penalized.clear();  // the draw is from the logits as they are
    a_draw_.chosen = b_.read_greedy_token(g, previous);
    return a_draw_.chosen;
  }
  b_.read_logits(g, logits_);
  a_draw_ = draw(sampler_, logits_, history_);
  if (ref_) {
    ref_->read_logits(g, ref_logits_);
    ref_draw_ = draw(ref_sampler_, ref_logits_, history_);
  }
  return a_draw_.chosen;
}

void StepSampler::report(Observer* obs, const Graph& g, const StepInfo& s, int32_t chosen, double seconds) {
  if (!obs) return;
  StepLogits l;
  l.chosen = chosen;
  std::optional<LogitsSummary> summary;
  if (device_greedy_) {
    summary = b_.probes().read_logits_summary(g);
    if (!summary) b_.read_logits(g, logits_);
  }
  if (summary) {
    l.summary = &*summary;
    l.n_vocab = summary->n_vocab;
    l.sampled = {nullptr, opt_.temperature, opt_.repeat_penalty};
  } else {
    l.logits = logits_.data();
    l.n_vocab = static_cast<int64_t>(logits_.size());
    l.sampled = sampled_of(a_draw_, logits_);
  }
  if (ref_) {
    l.ref_logits = ref_logits_.data();
    l.ref_chosen = ref_draw_.chosen;
    l.ref_sampled = sampled_of(ref_draw_, ref_logits_);
  }
  obs->on_step_logits(s, l);
  obs->on_step_end(s, seconds);
}

}  // namespace minfer
