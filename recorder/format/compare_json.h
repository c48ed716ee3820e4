// The paired-comparison parts of a trace record (docs/trace-format.md, NodeRecord `cmp`,
// `outliers`, `act_scales`; Logits `sampled`; Step `compare`), written as JSON text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "logits_compare.h"
#include "probes/logits_summary.h"
#include "probes/tensor_compare.h"

namespace minfer::trace {

// `,"cmp":{...}`: full-tensor metrics; max_abs_at as [row, col] of a tensor `cols` wide (null
// when no element differs).
// local (nullable): the node's own error, `"local":{...}` inside cmp.
void append_cmp(std::string& o, const TensorCompare& full, const TensorCompare* local, int64_t cols);
// `,"outliers":[{"row","col","value"(,"ref_value")}...]`; nothing when empty.
void append_outliers(std::string& o, const std::vector<Outlier>& v, int64_t cols, bool with_ref);
// `,"act_scales":{"min","max","mean","blocks","block_size"}`.
void append_act_scales(std::string& o, const BlockScales& s);
// `,"sampled":{"temperature","repeat_penalty","top":[{"id","p"}...],"chosen_p"}` from the
// summary of the penalized logits at the sampler's temperature (1 when greedy).
void append_sampled(std::string& o, const LogitsSummary& s, float temperature, float repeat_penalty);
// `,"compare":{"kl","margin_a","margin_b","top1_a","top1_b","chosen_differs"}`.
void append_step_compare(std::string& o, const LogitsCompare& c, bool chosen_differs);

}  // namespace minfer::trace
