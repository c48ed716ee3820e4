// What a trace keeps of one step's logits: the top-k tokens with their probabilities, the
// entropy of the whole distribution, and where the chosen token ranks. summarize_logits is the
// rule; the CUDA backend computes the same summary on the device (probes/cuda/logits_summary.cu), so a
// greedy traced run never copies the logits row to the host.
#pragma once
#include <cstdint>
#include <vector>

namespace minfer {

struct TopEntry {
  int32_t id;
  double p;      // softmax probability at temperature 1 over the full vocabulary
  float logit;
};

struct LogitsSummary {
  int64_t n_vocab = 0;
  int64_t nonfinite = 0;       // NaN/Inf logits: excluded from the distribution (p = 0)
  std::vector<TopEntry> top;   // by logit descending, ties by id ascending (-0 == +0), non-finite last
  double entropy = 0;          // nats; NaN when no logit is finite
  int32_t chosen = -1;
  int64_t chosen_rank = -1;    // index chosen would have in the full order; -1 when chosen < 0
  double chosen_p = 0;
};

// Numerically stable: probabilities as exp(x - max) / sum in double, entropy as
// log(sum) - sum(e * (x - max)) / sum.
LogitsSummary summarize_logits(const float* logits, int64_t n_vocab, int32_t chosen, int top_k);

}  // namespace minfer
