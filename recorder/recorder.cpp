#include "recorder.h"

#include <chrono>
#include <ctime>
#include <optional>
#include <vector>

#include "core/error.h"
#include "graph_json.h"
#include "json_out.h"
#include "logits_summary.h"
#include "selection.h"
#include "trace_file.h"

#ifndef MINFER_VERSION
#define MINFER_VERSION "unknown"
#endif
#ifndef MINFER_GIT_COMMIT
#define MINFER_GIT_COMMIT "unknown"
#endif

namespace minfer::trace {

namespace {
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string utc_now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* no_output_reason(const Node& n) {
  if (!n.executed()) return "fused";
  if (n.op == Op::KvStore) return "kv_store";
  if (n.op == Op::Input) return "input";  // token ids / positions: shown as the step's tokens
  return "no_buffer";
}

void append_key(std::string& o, const char* key) {
  o += '"';
  o += key;
  o += "\":";
}

void append_summary(std::string& o, const TensorSummary& t, const Node& n, const SummarySpec& spec) {
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
    o += ",\"shape\":["; append_int(o, n.rows());
    o += ','; append_int(o, n.cols());
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

struct Recorder::Impl {
  RecorderOptions opts;
  SummarySpec spec;
  NodeFilter node_filter;
  StepFilter step_filter;
  nlohmann::json meta;
  TokenText token_text;
  TraceFile file;
  Clock::time_point t0 = Clock::now();

  struct KnownGraph {
    std::string id;
    nlohmann::json json;  // with its id
    const Graph* last_seen = nullptr;
  };
  std::vector<KnownGraph> graphs;

  // The step in flight.
  bool in_step = false;
  bool step_selected = false;
  const Graph* graph = nullptr;
  std::string graph_id;
  Clock::time_point step_start;
  std::vector<std::string> node_records;  // by node id; "" = not recorded
  std::string logits = "null";
  std::vector<KernelRecord> kernels;

  Impl(RecorderOptions o, nlohmann::json m, TokenText tt)
      : opts(std::move(o)),
        spec(opts.spec()),
        node_filter(opts.nodes, "trace nodes"),
        step_filter(opts.steps, "trace steps"),
        meta(std::move(m)),
        token_text(std::move(tt)),
        file(opts.path) {
    if (!meta.is_object()) meta = nlohmann::json::object();
    meta["options"] = opts.to_json();
    if (!meta.contains("recorded_at")) meta["recorded_at"] = utc_now_iso();
    if (!meta.contains("minfer_version")) meta["minfer_version"] = MINFER_VERSION;
    if (!meta.contains("commit")) meta["commit"] = MINFER_GIT_COMMIT;
    write_head();
  }

  std::string text_of(int32_t id) const { return token_text ? token_text(id) : std::string(); }

  void write_head() {
    std::string h = "{\"format\":\"minfer-trace\",\"version\":2,\n\"meta\":";
    h += dump(meta);
    h += ",\n\"graphs\":[";
    for (size_t i = 0; i < graphs.size(); ++i) {
      if (i) h += ',';
      h += dump(graphs[i].json);
    }
    h += "],\n\"steps\":[";
    file.write_head(h);
  }

  // The id of g in this trace; a graph seen for the first time is added to the head.
  const std::string& graph_id_of(const Graph& g) {
    for (auto& k : graphs)
      if (k.last_seen == &g && k.json["nodes"].size() == g.nodes.size() &&
          k.json["n_tokens"] == g.n_tokens)
        return k.id;
    nlohmann::json j = graph_to_json(g, "x");
    for (auto& k : graphs) {
      j["id"] = k.id;
      if (j == k.json) {
        k.last_seen = &g;
        return k.id;
      }
    }
    std::string id = phase_name(g.phase);
    int same_phase = 0;
    for (auto& k : graphs) same_phase += k.json["phase"] == id;
    if (same_phase > 0) id += "." + std::to_string(same_phase + 1);
    j["id"] = id;
    graphs.push_back({id, std::move(j), &g});
    write_head();
    return graphs.back().id;
  }

  void begin(const Graph& g, const StepInfo& s) {
    if (in_step) fail("recorder: step ", s.step, " began before step end of the previous one");
    in_step = true;
    graph = &g;
    graph_id = graph_id_of(g);
    step_selected = step_filter.contains(s.step);
    step_start = Clock::now();
    node_records.assign(g.nodes.size(), std::string());
    logits = "null";
    kernels.clear();
  }

  void node(const Node& n, const NodeOutput* out, const NodeTime& t) {
    if (!in_step) fail("recorder: node '", n.name, "' reported outside a step");
    if (n.id < 0 || static_cast<size_t>(n.id) >= node_records.size())
      fail("recorder: node id ", n.id, " ('", n.name, "') is not in the step's graph");
    std::string o = "{\"id\":";
    append_int(o, n.id);
    if (t.measured()) {  // a step replayed as one CUDA graph has no host time per node
      o += ",\"time_us\":";
      append_number(o, t.seconds * 1e6);
      o += ",\"start_us\":";
      append_number(o, t.start_s * 1e6);
    }
    if (out == nullptr || !n.executed() || !n.has_output) {
      o += ",\"no_output\":\"";
      o += no_output_reason(n);
      o += "\"}";
    } else {
      o += ',';
      append_summary(o, out->summarize(spec), n, spec);
      o += '}';
    }
    node_records[static_cast<size_t>(n.id)] = std::move(o);
  }

  void on_logits(const float* x, int64_t n_vocab, int32_t chosen) {
    const LogitsSummary ls = summarize_logits(x, n_vocab, chosen, opts.top_k);
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
    o += '}';
    logits = std::move(o);
  }

  void end(const StepInfo& s, double seconds) {
    if (!in_step) fail("recorder: step ", s.step, " ended without beginning");
    std::string o = "{\"index\":";
    append_int(o, s.step);
    o += ",\"phase\":\"";
    o += phase_name(s.phase);
    o += "\",\"graph\":";
    append_string(o, graph_id);
    o += ",\"pos\":";
    append_int(o, s.pos0);
    o += ",\"start_ms\":";
    append_number(o, ms_between(t0, step_start));
    o += ",\"time_ms\":";
    append_number(o, seconds * 1e3);
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
    if (!step_selected) o += ",\"nodes_skipped\":true";
    o += ",\"nodes\":[";
    bool first = true;
    for (size_t id = 0; id < node_records.size(); ++id) {
      std::string& r = node_records[id];
      const Node& n = graph->nodes[id];
      // Fused-away nodes the executor did not report are still marked, never silently missing.
      if (r.empty() && step_selected && !n.executed() && node_filter.matches(n.name))
        r = "{\"id\":" + std::to_string(id) + ",\"no_output\":\"fused\"}";
      if (r.empty()) continue;
      if (!first) o += ',';
      first = false;
      o += r;
    }
    o += "],\"logits\":";
    o += logits;
    o += ",\"kernels\":[";
    for (size_t i = 0; i < kernels.size(); ++i) {
      const KernelRecord& k = kernels[i];
      if (i) o += ',';
      o += "{\"name\":";
      append_string(o, k.name);
      o += ",\"node\":"; append_int(o, k.node);
      o += ",\"start_ns\":"; append_int(o, k.start_ns);
      o += ",\"duration_ns\":"; append_int(o, k.duration_ns);
      o += ",\"grid\":[" + std::to_string(k.grid[0]) + ',' + std::to_string(k.grid[1]) + ',' +
           std::to_string(k.grid[2]) + "],\"block\":[" + std::to_string(k.block[0]) + ',' +
           std::to_string(k.block[1]) + ',' + std::to_string(k.block[2]) + ']';
      o += ",\"registers\":"; append_int(o, k.registers);
      o += ",\"shared_bytes\":"; append_int(o, k.shared_bytes);
      o += '}';
    }
    o += "]}";
    file.append_step(o);
    in_step = false;
    graph = nullptr;
  }
};

Recorder::Recorder(RecorderOptions opts, nlohmann::json meta, TokenText token_text)
    : opts_(std::move(opts)) {
  if (opts_.enabled()) impl_ = std::make_unique<Impl>(opts_, std::move(meta), std::move(token_text));
}

Recorder::~Recorder() = default;

std::string Recorder::partial_path() const { return impl_ ? impl_->file.partial_path() : ""; }

void Recorder::on_graph(const Graph& g) {
  if (impl_) impl_->graph_id_of(g);
}

void Recorder::on_step_begin(const Graph& g, const StepInfo& s) {
  if (impl_) impl_->begin(g, s);
}

bool Recorder::wants(const Node& n) const {
  return impl_ && impl_->step_selected && impl_->node_filter.matches(n.name);
}

void Recorder::on_node(const Node& n, const NodeOutput* out, const NodeTime& t) {
  if (impl_ && impl_->step_selected && impl_->node_filter.matches(n.name)) impl_->node(n, out, t);
}

void Recorder::on_logits(const StepInfo& s, const float* logits, int64_t n_vocab, int32_t chosen) {
  (void)s;
  if (impl_) impl_->on_logits(logits, n_vocab, chosen);
}

void Recorder::on_step_end(const StepInfo& s, double seconds) {
  if (impl_) impl_->end(s, seconds);
}

void Recorder::add_kernel(const KernelRecord& k) {
  if (impl_) impl_->kernels.push_back(k);
}

void Recorder::finish(const nlohmann::json& timings) {
  if (!impl_) return;
  if (impl_->in_step) fail(impl_->file.final_path(), ": finish() with a step still in flight");
  impl_->file.finish(dump(timings.is_object() ? timings : nlohmann::json::object()));
}

}  // namespace minfer::trace
