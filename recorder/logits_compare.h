// One step's logits of a paired trace, A against the reference B (docs/trace-format.md, Step
// `compare`): KL(A||B) over the full vocabulary and both top-1/top-2 margins, at temperature 1.
#pragma once
#include <cstdint>

namespace minfer::trace {

struct LogitsCompare {
  double kl = 0;           // nats; Inf when A puts mass where B has none (a non-finite B logit)
  double margin_a = 0;     // p(top1) - p(top2) of A's softmax
  double margin_b = 0;
  int32_t top1_a = -1;     // argmax over the finite logits, ties by lower id
  int32_t top1_b = -1;
};

// softmax in double as exp(x - max) / sum; non-finite logits have p = 0.
LogitsCompare compare_logits(const float* a, const float* b, int64_t n_vocab);

}  // namespace minfer::trace
