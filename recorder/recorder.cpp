#include "recorder.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "format/compare_json.h"
#include "core/build_stamp.h"
#include "core/error.h"
#include "format/gpu_time_json.h"
#include "format/graph_json.h"
#include "format/trace_keys.h"
#include "journal_thread.h"
#include "json_out.h"
#include "logits_compare.h"
#include "probes/logits_summary.h"
#include "selection.h"
#include "step_journal.h"
#include "format/step_json.h"
#include "step_pipeline.h"
#include "trace_file.h"


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

LogitsData copy_logits(const float* x, int64_t n, int32_t chosen, const SampledLogits& s) {
  LogitsData d;
  d.logits.assign(x, x + n);
  d.chosen = chosen;
  if (s.logits) {
    d.sampled_is_raw = s.logits == x;
    if (!d.sampled_is_raw) d.sampled.assign(s.logits, s.logits + n);
    d.temperature = s.temperature;
    d.repeat_penalty = s.repeat_penalty;
    d.has_sampled = true;
  }
  return d;
}

// With a journal: steps the writer may have queued before the run thread waits for it (~0.4 MB
// of results and ~0.5 MB of text each for a 0.5b decode step), and records the journal may hold
// before its thread waits for the writer to catch up (~0.4 MB each on disk).
constexpr int kJournaledPending = 8;
constexpr int64_t kMaxJournalRecords = 16;

int pipeline_workers(const nlohmann::json& meta) {
  // A CUDA run leaves the CPU cores idle: format there. A CPU run needs them for itself.
  if (meta.value("backend", std::string()) != "cuda") return 0;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores - 3, 1, 16);  // the run thread, the writer and the journal keep one core each
}

// {"p50", "p90", "max"} of the values (nulls when there are none).
nlohmann::json quantiles(std::vector<double> v) {
  if (v.empty()) return {{"p50", nullptr}, {"p90", nullptr}, {"max", nullptr}};
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {{"p50", at(0.5)}, {"p90", at(0.9)}, {"max", v.back()}};
}

// Adds the time since `t0` to `total` when it goes out of scope.
struct Stopwatch {
  double& total;
  Clock::time_point t0 = Clock::now();
  ~Stopwatch() { total += ms_between(t0, Clock::now()); }
};

}  // namespace

struct Recorder::Impl {
  RecorderOptions opts;
  SummarySpec spec;
  NodeFilter node_filter;
  StepFilter step_filter;
  StepFilter kernel_filter;
  nlohmann::json meta;
  TokenText token_text;
  StepFormatter formatter;
  TraceFile file;
  Clock::time_point t0 = Clock::now();
  std::unique_ptr<StepPipeline> pipeline;
  int workers = 0;
  // What recording costs the run's own thread (gathering results, copying logits) and how long
  // it waited for the pipeline; what the pipeline spent formatting (summed over its workers) and
  // writing: timings.recorder.
  double run_thread_ms = 0, queue_wait_ms = 0;
  mutable std::atomic<int64_t> format_ns{0};  // added to by the (const) step formatters
  double write_ms = 0;  // the writer thread's only, read after drain()
  // Per step, from the run's hand-over to the end of its write: what a kill -9 at that moment
  // would lose (the writer thread's only, read after drain()).
  std::vector<double> to_disk_ms;
  // A pipelined run's journal (step_journal.h): every head and ended step, appended on its own
  // thread (journal_thread.h) as it is handed to the pipeline; a step's token is shown once it is
  // journaled, so a kill loses no step whose token was shown. Null on an inline (CPU) run, whose
  // steps are written before on_step_end returns, and when meta does not give the vocabulary's
  // size (model.hparams.n_vocab) the journal's token texts need.
  std::unique_ptr<JournalThread> journal;
  int64_t steps_submitted = 0;  // the trace file's number of the next step
  // Heads and steps handed to the pipeline: a journal record starts the journal over when every
  // job before it is in the file (StepPipeline::written).
  int64_t jobs_submitted = 0;

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
  StepData step;               // the step in flight
  CompareTolerance tolerance;  // paired traces: meta.compare.tolerance

  Impl(RecorderOptions o, nlohmann::json m, TokenText tt)
      : opts(std::move(o)),
        spec(opts.spec()),
        node_filter(opts.nodes, "trace nodes"),
        step_filter(opts.steps, "trace steps"),
        kernel_filter(opts.kernel_steps, "trace kernels"),
        meta(std::move(m)),
        token_text(std::move(tt)),
        formatter(StepFormat{spec, opts.top_k, opts.outliers}, token_text),
        file(opts.path) {
    try {
      start();
    } catch (...) {
      // A recorder that cannot start (its journal's head did not fit on the disk) leaves no
      // file: its caller never gets a partial_path() to remove.
      const bool journaled = journal != nullptr;
      journal.reset();
      pipeline.reset();
      if (journaled) ::unlink(journal_path_for(file.partial_path()).c_str());
      ::unlink(file.partial_path().c_str());
      throw;
    }
  }

  void start() {
    if (!meta.is_object()) meta = nlohmann::json::object();
    meta["options"] = opts.to_json();
    if (!meta.contains("recorded_at")) meta["recorded_at"] = utc_now_iso();
    if (const auto c = meta.find(keys::meta::kCompare); c != meta.end() && c->is_object() && c->contains("tolerance") &&
                                              (*c)["tolerance"].is_object()) {
      tolerance.abs = (*c)["tolerance"].value("abs", tolerance.abs);
      tolerance.rel = (*c)["tolerance"].value("rel", tolerance.rel);
    }
    if (!meta.contains("minfer_version")) meta["minfer_version"] = MINFER_VERSION;
    if (!meta.contains("commit")) meta["commit"] = MINFER_GIT_COMMIT;
    workers = pipeline_workers(meta);
    if (workers > 0) open_journal();
    // Steps format in parallel parts within about a decode step's time. The run shows a token
    // once its step is safe (caught_up(), flush(): journaled, or written when there is no
    // journal) without waiting for the writer when it can (exec/generate.cpp). Without a journal
    // two steps queued let it hand over step N while N-1 is written. With one, a step waiting
    // for the writer is already safe: a deeper queue lets the run go on through the writer's
    // hiccups (a busy host formats a step in 2-6 ms now and then, the GPU computes one in 0.8).
    pipeline = std::make_unique<StepPipeline>(workers, journal ? kJournaledPending : 2);
    write_head();
  }

  // The pipeline's threads write to members declared after it (format_ns, write_ms, to_disk_ms):
  // it goes first, finishing what was handed over while they all still exist, after the journal's
  // thread, whose jobs ask the pipeline what it wrote. A run that failed destroys the recorder
  // without finish().
  ~Impl() {
    journal.reset();
    pipeline.reset();
  }

  void open_journal() {
    const auto model = meta.find("model");
    const int64_t n_vocab =
        model != meta.end() && model->is_object() && model->contains("hparams") && (*model)["hparams"].is_object()
            ? (*model)["hparams"].value("n_vocab", int64_t{0})
            : 0;
    if (n_vocab <= 0) return;
    Stopwatch sw{run_thread_ms};
    std::vector<std::string> vocab(static_cast<size_t>(n_vocab));
    if (token_text)
      for (int64_t i = 0; i < n_vocab; ++i) vocab[static_cast<size_t>(i)] = token_text(static_cast<int32_t>(i));
    journal = std::make_unique<JournalThread>(
        std::make_unique<StepJournal>(journal_path_for(file.partial_path()), formatter.format(), vocab));
  }

  // Journals a job about to be handed to the pipeline (the caller submits it next). When the
  // pipeline has written every job before it, the journal starts over first: the file then holds
  // every earlier record. (Asking whether the pipeline is idle would rarely be true here: by the
  // time the journal's thread runs, this job is usually submitted.) A writer that stays behind
  // would let the journal grow by every step: past kMaxJournalRecords the journal's thread waits
  // for it to catch up (the jobs before are all submitted: the run thread submits each job right
  // after posting its record).
  template <class Append> void journal_job(Append append) {
    const int64_t before = jobs_submitted++;
    if (!journal) return;
    Stopwatch sw{queue_wait_ms};  // the journal's thread is still on the previous job
    journal->post([this, before, append = std::move(append)](StepJournal& j) {
      if (j.records() >= kMaxJournalRecords) pipeline->wait_written(before);
      if (pipeline->written() >= before) j.start_over();
      append(j);
    });
  }

  void write_head() {
    std::string h = "{\"format\":\"minfer-trace\",\"version\":3,\n\"meta\":";
    h += dump(meta);
    h += ",\n\"graphs\":[";
    for (size_t i = 0; i < graphs.size(); ++i) {
      if (i) h += ',';
      h += dump(graphs[i].json);
    }
    h += "],\n\"steps\":[";
    journal_job([h, before = steps_submitted](StepJournal& j) { j.append_head(before, h); });
    // In order with the steps: the writer thread owns the file.
    pipeline->submit([h] { return h; }, [this](std::vector<std::string>& texts) { file.write_head(texts.at(0)); });
  }

  // The id of g in this trace; a graph seen for the first time is added to the head.
  const std::string& graph_id_of(const Graph& g) {
    for (auto& k : graphs)
      if (k.last_seen == &g && k.json[keys::graph::kNodes].size() == g.nodes.size() &&
          k.json[keys::graph::kNTokens] == g.n_tokens)
        return k.id;
    nlohmann::json j = graph_to_json(g, "x");
    for (auto& k : graphs) {
      j[keys::graph::kId] = k.id;
      if (j == k.json) {
        k.last_seen = &g;
        return k.id;
      }
    }
    std::string id = phase_name(g.phase);
    int same_phase = 0;
    for (auto& k : graphs) same_phase += k.json[keys::graph::kPhase] == id;
    if (same_phase > 0) id += "." + std::to_string(same_phase + 1);
    j[keys::graph::kId] = id;
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
    step_start = s.launched != Clock::time_point{} ? s.launched : Clock::now();
    step = StepData{};
    if (step_selected) step.nodes.reserve(g.nodes.size());  // no moves of the records while gathering
    step.graph_id = graph_id;
    step.selected = step_selected;
    step.start_ms = ms_between(t0, step_start);
  }

  void node(const Node& n, const NodeView& v) {
    Stopwatch sw{run_thread_ms};
    if (!in_step) fail("recorder: node '", n.name, "' reported outside a step");
    if (n.id < 0 || static_cast<size_t>(n.id) >= graph->nodes.size())
      fail("recorder: node id ", n.id, " ('", n.name, "') is not in the step's graph");
    NodeData d;
    d.id = n.id;
    d.rows = n.rows();
    d.cols = n.cols();
    d.time = v.time;
    if (v.out == nullptr || !n.executed() || !n.has_output) {
      d.no_output = no_output_reason(n);
    } else {
      d.summary = v.out->summarize(spec);
      if (v.ref) {  // paired: the reference's summary and the metrics against it
        d.ref = v.ref->summarize(spec);
        d.full = v.out->compare_to(*v.ref, tolerance);
        if (v.local_ref) d.local = v.out->compare_to(*v.local_ref, tolerance);
      }
      if (opts.outliers > 0) d.outliers = v.out->outliers(opts.outliers, v.ref);
      if (v.activation && v.activation_block > 0)  // 8-bit matmuls: the activation's block scales
        d.act_scales = v.activation->block_scales(graph->node(n.src[0]).cols(), v.activation_block);
      d.ref_present = v.ref != nullptr;
    }
    step.nodes.push_back(std::move(d));
  }

  void on_logits(const StepLogits& l) {
    Stopwatch sw{run_thread_ms};
    if (l.summary) {  // greedy from the logits as they are: the sampled distribution is the same
      LogitsData d;
      d.summary = *l.summary;
      d.chosen = l.chosen;
      d.temperature = l.sampled.temperature;
      d.repeat_penalty = l.sampled.repeat_penalty;
      d.has_sampled = d.sampled_is_raw = true;
      step.logits = std::move(d);
    } else {
      step.logits = copy_logits(l.logits, l.n_vocab, l.chosen, l.sampled);
    }
    if (l.ref_logits) step.ref_logits = copy_logits(l.ref_logits, l.n_vocab, l.ref_chosen, l.ref_sampled);
  }

  void end(const StepInfo& s, double seconds) {
    if (!in_step) fail("recorder: step ", s.step, " ended without beginning");
    step.info = s;
    step.seconds = seconds;
    // Fused-away nodes the executor did not report are still marked, never silently missing.
    if (step_selected) {
      std::vector<bool> seen(graph->nodes.size(), false);
      for (const NodeData& d : step.nodes) seen[static_cast<size_t>(d.id)] = true;
      for (const Node& n : graph->nodes)
        if (!seen[static_cast<size_t>(n.id)] && !n.executed() && node_filter.matches(n.name)) {
          NodeData d;
          d.id = n.id;
          d.no_output = kNoOutputReasons[0];  // fused
          step.nodes.push_back(std::move(d));
        }
      const auto by_id = [](const NodeData& a, const NodeData& b) { return a.id < b.id; };
      if (!std::is_sorted(step.nodes.begin(), step.nodes.end(), by_id))  // the executor reports in id order
        std::stable_sort(step.nodes.begin(), step.nodes.end(), by_id);
    }
    size_t n_ids = 0;
    for (const NodeData& nd : step.nodes) n_ids = std::max(n_ids, static_cast<size_t>(nd.id) + 1);
    step.node_gpu = node_gpu_times(step.gpu.kernels, n_ids);
    auto data = std::make_shared<const StepData>(std::move(step));
    journal_job([data, ordinal = steps_submitted](StepJournal& j) { j.append_step(ordinal, *data); });
    ++steps_submitted;
    Stopwatch sw{queue_wait_ms};
    pipeline->submit(step_parts(data), [this, handed = Clock::now()](std::vector<std::string>& parts) {
      Stopwatch w{write_ms};
      file.append_step(parts);
      to_disk_ms.push_back(ms_between(handed, Clock::now()));
    });
    in_step = false;
    graph = nullptr;
  }

  // The step object as parts the pipeline's workers format at once (step_json.h).
  std::vector<StepPipeline::Format> step_parts(const std::shared_ptr<const StepData>& d) const {
    std::vector<StepPipeline::Format> parts = formatter.parts(d);
    for (StepPipeline::Format& f : parts)
      f = [this, f = std::move(f)] {
        const auto t = Clock::now();
        std::string text = f();
        format_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count(),
                            std::memory_order_relaxed);
        return text;
      };
    return parts;
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
  return impl_ && impl_->node_filter.matches(n.name);
}

void Recorder::on_node_view(const Node& n, const NodeView& v) {
  if (impl_ && impl_->step_selected && impl_->node_filter.matches(n.name)) impl_->node(n, v);
}

void Recorder::on_step_logits(const StepInfo& s, const StepLogits& l) {
  (void)s;
  if (impl_) impl_->on_logits(l);
}

void Recorder::on_step_end(const StepInfo& s, double seconds) {
  if (impl_) impl_->end(s, seconds);
}

StepRecording Recorder::recording(const StepInfo& s) const {
  StepRecording r;
  r.nodes = r.summaries = impl_ && impl_->step_filter.contains(s.step);
  if (!impl_) return r;
  r.spec = impl_->spec;
  r.kernels = impl_->kernel_filter.contains(s.step);
  r.outliers = impl_->opts.outliers;
  r.logits_top_k = impl_->opts.top_k;
  r.step_by_step = impl_->opts.step_by_step;
  return r;
}

void Recorder::on_gpu_time(const StepInfo& s, const StepGpuTime& t) {
  (void)s;
  if (impl_) impl_->step.gpu = t;
}

// With a journal every ended step is already safe: only the pipeline's errors are news.
void Recorder::flush() {
  if (!impl_) return;
  Stopwatch sw{impl_->queue_wait_ms};
  if (impl_->journal) {
    impl_->journal->wait();
    impl_->pipeline->idle();
  } else {
    impl_->pipeline->drain();
  }
}

bool Recorder::caught_up() {
  if (!impl_) return true;
  const bool idle = impl_->pipeline->idle();
  return impl_->journal ? impl_->journal->done() : idle;
}

void Recorder::finish(const nlohmann::json& timings) {
  if (!impl_) return;
  if (impl_->in_step) fail(impl_->file.final_path(), ": finish() with a step still in flight");
  const auto t = Clock::now();
  if (impl_->journal) impl_->journal->wait();
  impl_->pipeline->drain();
  nlohmann::json all = timings.is_object() ? timings : nlohmann::json::object();
  all["recorder"] = {{"run_thread_ms", impl_->run_thread_ms},
                     {"queue_wait_ms", impl_->queue_wait_ms},
                     {"final_drain_ms", ms_between(t, Clock::now())},
                     {"format_threads", impl_->workers},
                     {"format_ms", static_cast<double>(impl_->format_ns.load()) / 1e6},
                     {"write_ms", impl_->write_ms},
                     {"step_to_disk_ms", quantiles(impl_->to_disk_ms)}};
  if (impl_->journal)
    all["recorder"].update(
        {{"journal_ms", impl_->journal->busy_ms()}, {"journal_bytes", impl_->journal->journal().bytes_written()}});
  impl_->file.finish(dump(all));
  if (impl_->journal) impl_->journal->journal().remove();  // the finished file holds every step
  impl_->file.close();  // only now: a next writer of the path must not find this run's journal
}

}  // namespace minfer::trace
