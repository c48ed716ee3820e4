// Sampling a step's logits for the generation loop: this run's sampler over the logits row, or
// the backend's own greedy pick (greedy without a repetition penalty: the argmax computed in the
// step, 4 bytes back instead of the logits row); in a lockstep paired run also the reference's
// sampler (same settings and seed, same history, so the same random draws: its pick is what the
// reference path would have chosen). Then the step's logits to the observer (StepLogits).
#pragma once
#include <cstdint>
#include <vector>

#include "exec/backend.h"
#include "exec/observer.h"
#include "sampler/sampler.h"

namespace minfer {

class StepSampler {
 public:
  // device_greedy: read the backend's greedy token (Backend::read_greedy_token) instead of the
  // logits; never with a reference.
  StepSampler(Backend& b, Backend* ref, const SamplerOptions& o, const std::vector<int32_t>& prompt, bool device_greedy);
  // Reads the step's logits (or only its greedy token) and samples (both runs); returns this
  // run's pick. previous: the step launched before the last one (its greedy token only).
  int32_t sample(const Graph& g, bool previous);
  // This run's last pick.
  int32_t chosen() const { return a_draw_.chosen; }
  // The step's logits to the observer, then its end. A device-greedy step reads them now: the
  // backend's summary when it computed one, else the row.
  void report(Observer* obs, const Graph& g, const StepInfo& s, int32_t chosen, double seconds);
  // The token fed next joins the history both samplers penalise.
  void append(int32_t token) { history_.push_back(token); }

 private:
  // One run's sampler over its logits: the penalized logits it drew from and its pick.
  struct Draw {
    std::vector<float> penalized;  // empty when the draw used the logits as they are
    int32_t chosen = -1;
  };
  static Draw draw(Sampler& s, const std::vector<float>& logits, const std::vector<int32_t>& history);
  SampledLogits sampled_of(const Draw& d, const std::vector<float>& logits) const;

  Backend& b_;
  Backend* ref_;
  SamplerOptions opt_;
  bool device_greedy_;
  Sampler sampler_, ref_sampler_;
  std::vector<int32_t> history_;
  std::vector<float> logits_, ref_logits_;
  Draw a_draw_, ref_draw_;
};

}  // namespace minfer
