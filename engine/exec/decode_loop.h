// The decode steps of a generation, after the prefill: one step per token until the generation
// ends, each launched and handed to the observer in one of three ways (decode_loop.cpp):
//  - plain: the step runs whole (Executor::run), then its token is sampled and reported;
//  - held: greedy on the device with an observer: the step is launched, its token read, and it
//    goes to the observer while the next step runs when the backend keeps its results
//    (BackendProbes::keeps_step_results);
//  - chained: the backend feeds a step the previous step's argmax on the device
//    (Backend::chains_greedy_token): step N+1 is launched before N's token is read.
#pragma once
#include <cstdint>

#include "exec/executor.h"
#include "exec/generate.h"
#include "exec/step_sampler.h"
#include "exec/token_display.h"
#include "exec/token_replay.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer {

// What the decode loop shares with generate(): the run's parts, set up by generate().
struct DecodeRun {
  const Model& m;
  Backend& b;
  Executor& ex;
  Observer* obs;
  const Graph& decode;
  const GenerateOptions& opt;
  const Tokenizer* tok;
  StepSampler& sampler;
  TokenReplay& replay;
  TokenDisplay& display;
  GenerateResult& r;
  bool device_greedy;  // the backend's greedy token is read, not the logits (StepSampler)
};

// The token fed after `picked` (the forced one when replaying) joins the result, the samplers'
// history and the tokens to show; returns it.
int32_t accept_token(const DecodeRun& d, int32_t picked);

// Decodes from position `pos` (the prompt's length), `next` the token the prefill fed.
void decode_tokens(const DecodeRun& d, int pos, int32_t next);

}  // namespace minfer
