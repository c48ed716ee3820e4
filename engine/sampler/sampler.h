// Token sampling: greedy (temperature 0), or temperature + top-k + top-p with an optional
// repetition penalty; seeded and deterministic across machines (own uniform draw).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace minfer {

struct SamplerOptions {
  float temperature = 0.0f;     // 0: greedy
  int top_k = 40;               // 0: off
  float top_p = 0.95f;          // 1: off
  float repeat_penalty = 1.0f;  // 1: off
  int repeat_last_n = 64;
  uint64_t seed = 42;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& o);
  // Picks a token from logits (not modified); `history` is used by the repetition penalty.
  // The same as pick(penalized(...)).
  int32_t sample(const float* logits, int64_t n_vocab, const std::vector<int32_t>& history);
  // The logits after the repetition penalty over the last repeat_last_n tokens of history:
  // what the draw starts from (a trace records their probabilities).
  std::vector<float> penalized(const float* logits, int64_t n_vocab, const std::vector<int32_t>& history) const;
  // Greedy argmax (ties: lowest id), or temperature + top-k + top-p with one uniform draw.
  int32_t pick(const std::vector<float>& penalized_logits);
  const SamplerOptions& options() const { return opt_; }

 private:
  double uniform();  // [0, 1)
  SamplerOptions opt_;
  std::mt19937_64 rng_;
};

}  // namespace minfer
