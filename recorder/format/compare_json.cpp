#include "format/compare_json.h"

#include "json_out.h"

namespace minfer::trace {
namespace {

void key(std::string& o, const char* k, bool first = false) {
  if (!first) o += ',';
  o += '"';
  o += k;
  o += "\":";
}

void metrics(std::string& o, const TensorCompare& c) {
  key(o, "sqnr_db", true); append_number(o, c.sqnr_db);
  key(o, "cosine"); append_number(o, c.cosine);
  key(o, "rel_l2"); append_number(o, c.rel_l2);
  key(o, "max_abs_diff"); append_number(o, c.max_abs_diff);
}

}  // namespace

void append_cmp(std::string& o, const TensorCompare& full, const TensorCompare* local, int64_t cols) {
  o += ",\"cmp\":{";
  metrics(o, full);
  key(o, "max_abs_at");
  if (full.max_abs_at < 0 || full.max_abs_diff == 0 || cols <= 0) {  // no difference anywhere
    o += "null";
  } else {
    o += '[';
    append_int(o, full.max_abs_at / cols);
    o += ',';
    append_int(o, full.max_abs_at % cols);
    o += ']';
  }
  key(o, "n_beyond"); append_int(o, full.n_beyond);
  if (local) {
    key(o, "local");
    o += '{';
    metrics(o, *local);
    o += '}';
  }
  o += '}';
}

void append_outliers(std::string& o, const std::vector<Outlier>& v, int64_t cols, bool with_ref) {
  if (v.empty() || cols <= 0) return;
  o += ",\"outliers\":[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) o += ',';
    o += '{';
    key(o, "row", true);
    append_int(o, v[i].index / cols);
    key(o, "col"); append_int(o, v[i].index % cols);
    key(o, "value"); append_number(o, v[i].value);
    if (with_ref) {
      key(o, "ref_value");
      append_number(o, v[i].ref_value);
    }
    o += '}';
  }
  o += ']';
}

void append_act_scales(std::string& o, const BlockScales& s) {
  o += ",\"act_scales\":{";
  key(o, "min", true); append_number(o, s.min);
  key(o, "max"); append_number(o, s.max);
  key(o, "mean"); append_number(o, s.mean);
  key(o, "blocks"); append_int(o, s.blocks);
  key(o, "block_size"); append_int(o, s.block_size);
  o += '}';
}

void append_sampled(std::string& o, const LogitsSummary& s, float temperature, float repeat_penalty) {
  o += ",\"sampled\":{";
  key(o, "temperature", true); append_number(o, temperature);
  key(o, "repeat_penalty"); append_number(o, repeat_penalty);
  key(o, "top");
  o += '[';
  for (size_t i = 0; i < s.top.size(); ++i) {
    if (i) o += ',';
    o += "{\"id\":";
    append_int(o, s.top[i].id);
    o += ",\"p\":";
    append_number(o, s.top[i].p);
    o += '}';
  }
  o += ']';
  key(o, "chosen_p");
  if (s.chosen_rank >= 0) append_number(o, s.chosen_p);
  else o += "null";
  o += '}';
}

void append_step_compare(std::string& o, const LogitsCompare& c, bool chosen_differs) {
  o += ",\"compare\":{";
  key(o, "kl", true); append_number(o, c.kl);
  key(o, "margin_a"); append_number(o, c.margin_a);
  key(o, "margin_b"); append_number(o, c.margin_b);
  key(o, "top1_a"); append_int(o, c.top1_a);
  key(o, "top1_b"); append_int(o, c.top1_b);
  key(o, "chosen_differs"); append_bool(o, chosen_differs);
  o += '}';
}

}  // namespace minfer::trace
