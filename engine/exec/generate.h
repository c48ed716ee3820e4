// The generation loop: prefill the prompt, then decode one token per step, sampling each.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "exec/executor.h"
#include "model/model.h"
#include "sampler/sampler.h"

namespace minfer {

class Tokenizer;

struct GenerateOptions {
  int n_predict = 32;
  bool stop_at_eog = true;
  SamplerOptions sampler;
  // Paired run: a second backend (another matmul path) run in lockstep on the same tokens; the
  // observer sees both (Executor) and the reference's logits and pick (StepLogits).
  Backend* reference = nullptr;
  // Teacher forcing: the tokens fed as the generated ones instead of the sampler's picks (the
  // sampler still runs: its pick is reported as `chosen`). Generation stops when they run out.
  std::optional<std::vector<int32_t>> forced;
  // Whether the step graphs are fused (make_graph; EngineOptions::graph_fusion, off with
  // MINFER_NO_FUSION=1).
  bool graph_fusion = true;
};

struct GenerateResult {
  std::vector<int32_t> prompt, generated;
  double prefill_s = 0;            // prompt graph incl. first logits
  std::vector<double> decode_s;    // per decode step: previous token to its token, observer included
  bool forced_ran_out = false;     // stopped because GenerateOptions::forced ran out
  double decode_total_s() const;
  double prefill_tok_s() const;
  double decode_tok_s() const;
};

// on_token is called with each generated id once the observer has made its step safe
// (Observer::flush, Observer::caught_up): as soon as it is chosen, or, when its step overlaps
// the next ones (chained or held decode steps with an observer), once the next token is read and
// the observer has caught up; when it has not, the loop waits for it once 3 tokens are
// unshown.
GenerateResult generate(const Model& m, Backend& b, const Tokenizer* tok,
                        const std::vector<int32_t>& prompt, const GenerateOptions& opt,
                        Observer* obs, const std::function<void(int32_t)>& on_token = {});

}  // namespace minfer
