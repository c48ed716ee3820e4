#include "format/step_json.h"

#include "format/compare_json.h"
#include "core/error.h"
#include "json_out.h"
#include "logits_compare.h"

namespace minfer::trace {

namespace {

void append_key(std::string& o, const char* key) {
  o += '"';
  o += key;
  o += "\":";
}

void append_summary(std::string& o, const TensorSummary& t, int64_t rows, int64_t cols, const SummarySpec& spec) {
  const TensorStats& s = t.stats;
  append_key(o, "stats");
  o += "{\"min\":"; append_number(o, s.min);
  o += ",\"max\":"; append_number(o, s.max);
  o += ",\"mean\":"; append_number(o, s.mean);
  o += ",\"absmean\":"; append_number(o, s.absmean);
  o += ",\"std\":"; append_number(o, s.std);
  o += ",\"count\":"; append_int(o, s.count);
  o += ",\"nan\":"; append_int(o, s.nan);
  o += ",\"inf\":"; append_int(o, s.inf);
  o += '}';
  if (spec.grid_rows > 0 && spec.grid_cols > 0) {
    const ValueGrid& g = t.grid;
    o += ",\"grid\":{\"rows\":"; append_int(o, g.rows);
    o += ",\"cols\":"; append_int(o, g.cols);
    o += ",\"row_stride\":"; append_int(o, g.row_stride);
    o += ",\"col_stride\":"; append_int(o, g.col_stride);
    o += ",\"shape\":["; append_int(o, rows);
    o += ','; append_int(o, cols);
    o += "],\"values\":[";
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (i) o += ',';
      append_number(o, g.values[i]);
    }
    o += "]}";
  }
  if (spec.hist_bins > 0) {
    const Histogram& h = t.hist;
    o += ",\"hist\":{\"lo\":"; append_number(o, h.lo);
    o += ",\"hi\":"; append_number(o, h.hi);
    o += ",\"counts\":[";
    for (size_t i = 0; i < h.counts.size(); ++i) {
      if (i) o += ',';
      append_int(o, h.counts[i]);
    }
    o += "],\"underflow\":"; append_int(o, h.underflow);
    o += ",\"overflow\":"; append_int(o, h.overflow);
    o += '}';
  }
}

}  // namespace

std::vector<std::function<std::string()>> StepFormatter::parts(const std::shared_ptr<const StepData>& d) const {
  std::vector<std::function<std::string()>> p;
  p.push_back([this, d] { return head_json(*d); });
  for (size_t b = 0; b < d->nodes.size(); b += kNodesPerPart) {
    const size_t e = std::min(d->nodes.size(), b + kNodesPerPart);
    p.push_back([this, d, b, e] { return node_records_json(*d, b, e); });
  }
  p.push_back([this, d] { return tail_json(*d); });
  return p;
}

std::string StepFormatter::text(const StepData& d) const {
  std::string o = head_json(d);
  o += node_records_json(d, 0, d.nodes.size());
  o += tail_json(d);
  return o;
}

// From the step's start up to and including `"nodes":[`.
std::string StepFormatter::head_json(const StepData& d) const {
  const StepInfo& s = d.info;
  std::string o = "{\"index\":";
  append_int(o, s.step);
  o += ",\"phase\":\"";
  o += phase_name(s.phase);
  o += "\",\"graph\":";
  append_string(o, d.graph_id);
  o += ",\"pos\":";
  append_int(o, s.pos0);
  o += ",\"start_ms\":";
  append_number(o, d.start_ms);
  o += ",\"time_ms\":";
  append_number(o, d.seconds * 1e3);
  o += ",\"tokens\":[";
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (i) o += ',';
    o += "{\"id\":";
    append_int(o, s.tokens[i]);
    o += ",\"text\":";
    append_string(o, text_of(s.tokens[i]));
    o += '}';
  }
  o += ']';
  append_step_gpu_fields(o, d.gpu);
  if (!d.selected) o += ",\"nodes_skipped\":true";
  o += ",\"nodes\":[";
  return o;
}

// The records of d.nodes[begin, end), each but the step's first after a comma.
std::string StepFormatter::node_records_json(const StepData& d, size_t begin, size_t end) const {
  std::string o;
  for (size_t i = begin; i < end; ++i) {
    if (i) o += ',';
    std::string r = node_record(d.nodes[i]);
    const NodeGpuTime& gt = d.node_gpu.at(static_cast<size_t>(d.nodes[i].id));
    if (gt.us >= 0) {  // the node's GPU time from its kernels
      r.pop_back();
      append_node_gpu_fields(r, gt);
      r += '}';
    }
    o += r;
  }
  return o;
}

std::string StepFormatter::node_record(const NodeData& d) const {
  std::string o = "{\"id\":";
  append_int(o, d.id);
  if (d.time.measured()) {  // a step replayed as one CUDA graph has no host time per node
    o += ",\"time_us\":";
    append_number(o, d.time.seconds * 1e6);
    o += ",\"start_us\":";
    append_number(o, d.time.start_s * 1e6);
  }
  if (d.no_output) {
    o += ",\"no_output\":\"";
    o += d.no_output;
    o += "\"}";
    return o;
  }
  o += ',';
  append_summary(o, d.summary, d.rows, d.cols, f_.spec);
  if (d.ref) {
    o += ",\"ref\":{";
    append_summary(o, *d.ref, d.rows, d.cols, f_.spec);
    o += '}';
    append_cmp(o, *d.full, d.local ? &*d.local : nullptr, d.cols);
  }
  if (f_.outliers > 0) append_outliers(o, d.outliers, d.cols, d.ref_present);
  if (d.act_scales) append_act_scales(o, *d.act_scales);
  o += '}';
  return o;
}

// A Logits object; `sampled` when the sampler's logits are known.
std::string StepFormatter::logits_json(const LogitsData& d) const {
  const int64_t n_vocab = d.summary ? d.summary->n_vocab : static_cast<int64_t>(d.logits.size());
  const int32_t chosen = d.chosen;
  const LogitsSummary ls = d.summary ? *d.summary : summarize_logits(d.logits.data(), n_vocab, chosen, f_.top_k);
  std::string o = "{\"n_vocab\":";
  append_int(o, ls.n_vocab);
  o += ",\"nonfinite\":";
  append_int(o, ls.nonfinite);
  o += ",\"top\":[";
  for (size_t i = 0; i < ls.top.size(); ++i) {
    if (i) o += ',';
    o += "{\"id\":";
    append_int(o, ls.top[i].id);
    o += ",\"text\":";
    append_string(o, text_of(ls.top[i].id));
    o += ",\"p\":";
    append_number(o, ls.top[i].p);
    o += ",\"logit\":";
    append_number(o, ls.top[i].logit);
    o += '}';
  }
  o += "],\"entropy\":";
  append_number(o, ls.entropy);
  o += ",\"chosen\":";
  append_int(o, ls.chosen);
  o += ",\"chosen_text\":";
  append_string(o, ls.chosen >= 0 ? text_of(ls.chosen) : std::string());
  o += ",\"chosen_rank\":";
  append_int(o, ls.chosen_rank);
  o += ",\"chosen_p\":";
  append_number(o, ls.chosen_rank >= 0 ? ls.chosen_p : 0.0);
  if (d.has_sampled) {
    // The distribution the draw came from: penalized logits at the temperature (1 if greedy).
    const float t = d.temperature > 0 ? d.temperature : 1.0f;
    if (d.sampled_is_raw && t == 1.0f) {
      append_sampled(o, ls, d.temperature, d.repeat_penalty);
    } else {
      if (d.summary) fail("recorder: a backend's logits summary stands for a draw at temperature ", t);
      std::vector<float> scaled = d.sampled_is_raw ? d.logits : d.sampled;
      for (float& v : scaled) v /= t;
      append_sampled(o, summarize_logits(scaled.data(), n_vocab, chosen, f_.top_k), d.temperature, d.repeat_penalty);
    }
  }
  o += '}';
  return o;
}

// From the end of the node records (`],"logits":`) to the step's end.
std::string StepFormatter::tail_json(const StepData& d) const {
  std::string o = "],\"logits\":";
  o += d.logits ? logits_json(*d.logits) : std::string("null");
  if (d.ref_logits && d.logits) {
    o += ",\"ref_logits\":";
    o += logits_json(*d.ref_logits);
    append_step_compare(o, compare_logits(d.logits->logits.data(), d.ref_logits->logits.data(),
                                          static_cast<int64_t>(d.logits->logits.size())),
                        d.logits->chosen != d.ref_logits->chosen);
  }
  o += ",\"kernels\":[";
  append_kernels(o, d.gpu.kernels);
  o += "]}";
  return o;
}

}  // namespace minfer::trace
