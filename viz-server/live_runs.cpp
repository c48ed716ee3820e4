#include "live_runs.h"

#include <httplib.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "cli/backend_choice.h"
#include "cli/run_meta.h"
#include "cli/trace_session.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "event_log.h"
#include "exec/generate.h"
#include "format/graph_json.h"
#include "http_util.h"
#include "json_out.h"
#include "model/model.h"
#include "recorder_options.h"
#include "format/step_json.h"
#include "tokenizer/tokenizer.h"
#include "viz_context.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace minfer::viz {
namespace {

constexpr int kMaxTokens = 4096;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void push(EventLog& log, const std::string& type, const json& data) { log.push(type, dump(data)); }

struct Cancelled {};

struct Run {
  int id = 0;
  std::string trace_name;
  std::shared_ptr<EventLog> log = std::make_shared<EventLog>();
  std::atomic<bool> cancel{false};
  std::atomic<bool> finished{false};
  std::atomic<int> listeners{0};
};

// Tees the engine's observer calls to the run's trace session and to the event log. Per-node summaries
// for the page (stats only) are computed only while a page listens; what the page gets is spelled
// by the trace's own formatter and logits summary, so the stream says what the file says.
class LiveObserver final : public Observer {
 public:
  LiveObserver(Observer* trace, Run& run, const Tokenizer& tok) : rec_(trace), run_(run), tok_(tok) {}
  void on_graph(const Graph& g) override {
    rec_->on_graph(g);
    push(*run_.log, "graph", {{"graph", trace::graph_to_json(g)}});  // trace-keys: the live event's kind
  }
  void on_step_begin(const Graph& g, const StepInfo& s) override {
    // The step boundary is where a cancel takes effect: the trace keeps whole steps only.
    if (run_.cancel) throw Cancelled{};
    rec_->on_step_begin(g, s);
    json toks = json::array();
    for (int32_t id : s.tokens) toks.push_back({{"id", id}, {"text", text(id)}});
    push(*run_.log, "step", {{"step", s.step}, {"phase", s.phase == Phase::Prefill ? "prefill" : "decode"},
                            {"graph", s.phase == Phase::Prefill ? "prefill" : "decode"}, {"pos", s.pos0}, {"tokens", toks}});
    step_ = s.step;
  }
  bool wants(const Node& n) const override { return rec_->wants(n) || run_.listeners > 0; }
  // The recorder gets the whole view (outliers' activation scales, paired comparisons). The page
  // gets the node's record as the trace file writes it (trace::StepFormatter::node_record),
  // statistics only, with its step.
  void on_node_view(const Node& n, const NodeView& v) override {
    if (rec_->wants(n)) rec_->on_node_view(n, v);
    if (run_.listeners == 0) return;
    trace::NodeData d;
    d.id = n.id;
    d.rows = n.rows();
    d.cols = n.cols();
    d.time = v.time;
    if (v.out == nullptr || !n.executed() || !n.has_output) d.no_output = trace::no_output_reason(n);
    else d.summary = v.out->summarize(records_.format().spec);
    std::string ev = "{\"step\":" + std::to_string(step_) + ",";
    ev += records_.node_record(d).substr(1);
    run_.log->push("node", ev);
  }
  // The recorder gets what the sampler drew from (logits.sampled). The page gets the chosen token
  // and the first entries of the trace's top-k: the one softmax/top-k rule (summarize_logits),
  // numbers at the trace's precision, texts as the trace writes them.
  void on_step_logits(const StepInfo& s, const StepLogits& l) override {
    rec_->on_step_logits(s, l);
    const LogitsSummary ls = l.summary ? *l.summary : summarize_logits(l.logits, l.n_vocab, l.chosen, kTokenEventTop);
    json tj = json::array();
    for (size_t i = 0; i < ls.top.size() && i < static_cast<size_t>(kTokenEventTop); ++i)
      tj.push_back({{"id", ls.top[i].id}, {"text", text(ls.top[i].id)}, {"p", trace::round6(ls.top[i].p)}});
    push(*run_.log, "token", {{"step", s.step}, {"id", l.chosen}, {"text", text(l.chosen)},
                             {"p", trace::round6(ls.chosen_rank >= 0 ? ls.chosen_p : 0.0)}, {"top", tj}});
  }
  void on_step_end(const StepInfo& s, double seconds) override {
    rec_->on_step_end(s, seconds);
    step_seconds.push_back(seconds);
    push(*run_.log, "step_end", {{"step", s.step}, {"time_ms", seconds * 1e3}});
  }
  void flush() override { rec_->flush(); }
  bool caught_up() override { return rec_->caught_up(); }
  std::vector<double> step_seconds;

 private:
  static constexpr int kTokenEventTop = 5;  // top entries per token event
  static trace::StepFormat stats_only() {
    trace::StepFormat f;
    f.spec.grid_rows = 0;
    f.spec.hist_bins = 0;
    return f;
  }
  // A token's text as the trace writes it (invalid UTF-8 replaced, recorder/json_out.h).
  std::string text(int32_t id) const { return id >= 0 ? trace::sanitize_utf8(tok_.token_bytes(id)) : std::string(); }

  Observer* rec_;  // the trace session's (the recorder)
  Run& run_;
  const Tokenizer& tok_;
  trace::StepFormatter records_{stats_only(), nullptr};  // node events: the trace's records, statistics only
  int step_ = 0;
};

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

struct HttpError {
  int status;
  std::string message;
};

}  // namespace

class LiveRuns {
 public:
  LiveRuns(std::vector<std::string> models, fs::path out_dir, const EngineOptions& engine, std::string digest_cache_dir)
      : out_dir_(std::move(out_dir)), engine_(engine), digest_cache_dir_(std::move(digest_cache_dir)) {
    for (auto& m : models) paths_[fs::path(m).filename().string()] = m;
  }
  ~LiveRuns() {
    std::shared_ptr<Run> r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      r = current_;
    }
    if (r) r->cancel = true;
    if (thread_.joinable()) thread_.join();
  }

  json models_json() {
    std::lock_guard<std::mutex> lock(mu_);
    json list = json::array();
    for (auto& [name, path] : paths_) {
      std::error_code ec;
      list.push_back({{"name", name}, {"size", static_cast<int64_t>(fs::file_size(path, ec))}});
    }
    const bool busy = current_ && !current_->finished;
    return {{"models", list}, {"busy", busy}, {"run", current_ ? json(current_->id) : json(nullptr)},
            {"limits", {{"max_tokens", kMaxTokens}}}};
  }

  // Validates the request, loads the model, starts the run thread. Throws HttpError.
  json start(const json& body) {
    if (!body.is_object()) throw HttpError{400, "run: the body must be a JSON object"};
    auto str = [&](const char* k, const std::string& d) {
      if (!body.contains(k)) return d;
      if (!body[k].is_string()) throw HttpError{400, std::string("run: '") + k + "' must be a string"};
      return body[k].get<std::string>();
    };
    auto num = [&](const char* k, double d, double lo, double hi) {
      if (!body.contains(k)) return d;
      if (!body[k].is_number()) throw HttpError{400, std::string("run: '") + k + "' must be a number"};
      const double v = body[k].get<double>();
      if (!(v >= lo && v <= hi))
        throw HttpError{400, "run: '" + std::string(k) + "' is " + dump(body[k]) + ", outside [" + dump(lo) + ", " + dump(hi) + "]"};
      return v;
    };
    const std::string model = str("model", paths_.size() == 1 ? paths_.begin()->first : "");
    if (!paths_.count(model)) {
      std::string have;
      for (auto& [n, p] : paths_) have += (have.empty() ? "" : ", ") + n;
      throw HttpError{400, "run: unknown model '" + model + "' (this server has: " + have + ")"};
    }
    const std::string prompt = str("prompt", "");
    if (prompt.empty()) throw HttpError{400, "run: 'prompt' is empty"};
    if (prompt.size() > (size_t(1) << 20)) throw HttpError{400, "run: 'prompt' is longer than 1 MiB"};
    const int max_tokens = static_cast<int>(num("max_tokens", 32, 1, kMaxTokens));
    if (body.contains("max_tokens") && body["max_tokens"].get<double>() != std::floor(body["max_tokens"].get<double>()))
      throw HttpError{400, "run: 'max_tokens' must be an integer"};
    SamplerOptions so;
    so.temperature = static_cast<float>(num("temperature", 0.7, 0, 10));
    so.top_k = static_cast<int>(num("top_k", 40, 0, 1000000));
    so.top_p = static_cast<float>(num("top_p", 0.95, 0, 1));
    if (so.top_p == 0) throw HttpError{400, "run: 'top_p' is 0; it must be above 0 and at most 1 (1 keeps every token)"};
    so.repeat_penalty = static_cast<float>(num("repeat_penalty", 1.1, 0.5, 5));
    so.seed = static_cast<uint64_t>(num("seed", 1, 0, 9007199254740991.0));
    const std::string backend = str("backend", "auto"), path = str("matmul_path", "mmq");
    if (backend != "cpu" && backend != "cuda" && backend != "auto")
      throw HttpError{400, "run: 'backend' is '" + backend + "' (expected cpu, cuda or auto)"};
    if (path != "mmq" && path != "f16" && path != "f32")
      throw HttpError{400, "run: 'matmul_path' is '" + path + "' (expected mmq, or f32/f16 for the float path)"};

    std::unique_lock<std::mutex> lock(mu_);
    if (current_ && !current_->finished)
      throw HttpError{409, "run: busy: run " + std::to_string(current_->id) + " is in progress (one run at a time; cancel it or wait)"};
    if (thread_.joinable()) thread_.join();  // the finished one
    LoadedModel& lm = load(model);
    const auto ids = lm.tok->encode_prompt(prompt);
    if (ids.empty()) throw HttpError{400, "run: the prompt encodes to no tokens"};
    if (static_cast<int64_t>(ids.size()) + max_tokens > lm.model->hp.n_ctx)
      throw HttpError{400, "run: the prompt has " + std::to_string(ids.size()) + " tokens; with max_tokens " +
                               std::to_string(max_tokens) + " that exceeds the model's context of " +
                               std::to_string(lm.model->hp.n_ctx) + " tokens"};
    std::unique_ptr<Backend> be;
    try {
      be = make_backend(backend, *lm.model, path == "mmq" ? MatmulPath::MMQ : MatmulPath::Float, engine_.cuda, nullptr,
                        true);
      be->reserve_context(std::min<int64_t>(lm.model->hp.n_ctx, static_cast<int64_t>(ids.size()) + max_tokens + 1));
    } catch (const Error& e) {
      throw HttpError{400, std::string("run: backend '") + backend + "': " + e.what()};
    }
    auto run = std::make_shared<Run>();
    run->id = ++next_id_;
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
    const std::string stem = "live-" + fs::path(model).stem().string() + "-" + stamp + "-" + std::to_string(run->id) + "-" + path;
    trace::RecorderOptions opts;  // the recorder's defaults
    // The meta every recording program writes (cli/run_meta.h), marked as a live run's.
    // Its observer asks the backend for nothing (LiveObserver has no recording()): the meta says
    // where its summaries came from and that it holds no kernel records.
    RunSettings settings{paths_.at(model), so, max_tokens, opts.kernel_steps};
    settings.backend_records = false;
    settings.digest_cache_dir = digest_cache_dir_;
    json meta = run_meta(*lm.model, *be, settings,
                         TraceExtras{prompt, nullptr, nullptr, [b = be.get()] { return read_bandwidth_gbs(*b); }});
    meta["live_run"] = true;
    std::string claim_error;  // the run's first event then says it (as it did when the run claimed its file)
    std::unique_ptr<TraceSession> session = claim_trace(stem, opts, meta, *lm.tok, run->trace_name, claim_error);
    push(*run->log, "start", {{"id", run->id}, {"model", model}, {"prompt", prompt}, {"prompt_tokens", ids.size()},
                             {"max_tokens", max_tokens}, {"backend", be->name()}, {"device", be->device()},
                             {"matmul_path", path}, {"trace", run->trace_name}, {"meta", meta}});
    current_ = run;
    GenerateOptions g;
    g.n_predict = max_tokens;
    g.sampler = so;
    g.graph_fusion = engine_.graph_fusion;
    thread_ = std::thread([this, run, &lm, ids, g, session = std::move(session), claim_error, be = std::move(be)]() mutable {
      execute(*run, lm, *be, ids, g, std::move(session), claim_error);
    });
    return {{"id", run->id}, {"trace", run->trace_name}, {"events", "api/run/events?id=" + std::to_string(run->id)}};
  }

  bool cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!current_ || current_->finished) return false;
    current_->cancel = true;
    return true;
  }

  std::shared_ptr<Run> find(int id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (current_ && (id < 0 || current_->id == id)) return current_;
    return nullptr;
  }

  // Token texts from a served model's vocabulary ("" model: the only one).
  json vocab(const std::string& model_file, const std::string& ids) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string name = fs::path(model_file).filename().string();
    if (!paths_.count(name)) throw HttpError{404, "vocab: this server has no model '" + name + "' (start minfer-viz with --model " + name + ")"};
    LoadedModel& lm = load(name);
    json out = json::object();
    size_t at = 0;
    int count = 0;
    while (at < ids.size() && count < 10000) {
      size_t comma = ids.find(',', at);
      const std::string part = ids.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      at = comma == std::string::npos ? ids.size() : comma + 1;
      if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
        throw HttpError{400, "vocab: '" + part + "' is not a token id"};
      const int64_t id = std::stoll(part);
      if (id >= lm.model->hp.n_vocab) throw HttpError{400, "vocab: token id " + part + " is outside the vocabulary"};
      out[part] = lm.tok->token_bytes(static_cast<int32_t>(id));
      ++count;
    }
    return {{"model", name}, {"tokens", out}};
  }

 private:
  // The run's recording session, its .partial claimed under stem + ".json", or stem + ".2.json", ".3.json"...
  // when a file (or link) of that name or its .partial is in the folder already: another server
  // sharing the folder numbers its runs from 1 too, and a run's trace saved over another's would
  // lose that one. Claimed when the run is accepted, not when it starts: a run of another server
  // accepted in the same second then sees this one's .partial and takes the next name (it used
  // to pick the same name and fail on the claim). `name` receives the name; a session that
  // cannot start for another reason (the disk, the folder) is null, with its message in `error`.
  std::unique_ptr<TraceSession> claim_trace(const std::string& stem, trace::RecorderOptions opts, const json& meta,
                                            const Tokenizer& tok, std::string& name, std::string& error) const {
    auto taken = [&](const std::string& n) {
      std::error_code ec;
      return fs::exists(fs::symlink_status(out_dir_ / n, ec)) || fs::exists(fs::symlink_status(out_dir_ / (n + ".partial"), ec));
    };
    int raced = 0;
    for (int k = 1; k <= 1000; ++k) {
      name = stem + (k > 1 ? "." + std::to_string(k) : "") + ".json";
      if (taken(name)) continue;
      opts.path = (out_dir_ / name).string();
      try {
        return TraceSession::start(opts, meta, tok);
      } catch (const Error& e) {
        // Taken between the look and the claim (another server's run): the next name. Any other
        // failure (the disk, the folder's permissions) is this run's; so is a name that keeps
        // being taken (a recorder that failed after creating its file would look like that).
        if (taken(name) && ++raced < 8) continue;
        error = e.what();
        return nullptr;
      }
    }
    throw HttpError{409, "run: " + stem + ".json and 999 names after it are taken in the traces folder"};
  }

  LoadedModel& load(const std::string& name) {
    auto it = loaded_.find(name);
    if (it != loaded_.end()) return it->second;
    LoadedModel lm;
    try {
      // A pool of its own for the weights' scan: a run may be using the global one (a load
      // for /api/vocab comes while a run goes on), and ThreadPool runs one loop at a time.
      ThreadPool pool(engine_.threads);
      lm.model = Model::load(paths_.at(name), &pool);
      lm.tok = Tokenizer::from_gguf(*lm.model->file);
    } catch (const Error& e) {
      throw HttpError{422, std::string("run: ") + e.what()};
    }
    return loaded_[name] = std::move(lm);
  }

  void execute(Run& run, LoadedModel& lm, Backend& be, const std::vector<int32_t>& ids, const GenerateOptions& g,
               std::unique_ptr<TraceSession> session, const std::string& claim_error) {
    const Tokenizer& tok = *lm.tok;
    bool cancelled = false;
    GenerateResult r;
    // The last event ("done" or "error"); it goes out once the run is over (see below).
    std::string last_type = "error";
    json last;
    // The page connects right after it started the run: give it a moment, so the prefill's
    // nodes are streamed too (per-node events exist only while someone listens).
    for (int i = 0; i < 100 && run.listeners == 0 && !run.cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // The trace is recorded as minfer records one (cli/trace_session.h), its session started when
    // the run was accepted (claim_trace). A failed run, or one cancelled before its first step,
    // leaves no file: its session is discarded.
    bool saved = false;
    try {
      if (!session) throw Error(claim_error);
      LiveObserver obs(session->observer(), run, tok);
      std::string text;
      std::vector<int32_t> gen;
      try {
        r = generate(*lm.model, be, &tok, ids, g, &obs, [&](int32_t id) { text += tok.token_bytes(id); gen.push_back(id); });
      } catch (const Cancelled&) {
        cancelled = true;
        r.prompt = ids;
        r.generated = gen;
        if (!obs.step_seconds.empty()) {
          r.prefill_s = obs.step_seconds[0];
          r.decode_s.assign(obs.step_seconds.begin() + 1, obs.step_seconds.end());
        }
      }
      if (!obs.step_seconds.empty()) {
        session->finish(r, std::nullopt);  // a live run measures no load time
        saved = true;
      }
      last = {{"id", run.id}, {"trace", saved ? json(run.trace_name) : json(nullptr)}, {"cancelled", cancelled},
              {"steps", obs.step_seconds.size()}, {"generated", r.generated.size()}, {"text", text},
              {"prefill_tok_s", r.prefill_tok_s()}, {"decode_tok_s", r.decode_tok_s()}};
      last_type = "done";
    } catch (const std::exception& e) {
      last_type = "error";
      last = {{"id", run.id}, {"message", e.what()}};
    }
    if (session && !saved) session->discard();
    session.reset();
    // Finished (trace saved, recorder gone) before the last event goes out: a client that
    // starts the next run on "done" or "error" must not be told this one is still busy.
    run.finished = true;
    push(*run.log, last_type, last);
    run.log->close();
  }

  fs::path out_dir_;
  EngineOptions engine_;                      // every run's (the server's VizConfig::engine)
  std::string digest_cache_dir_;              // meta.model.sha256's cache ("" none)
  std::map<std::string, std::string> paths_;  // file name → path
  std::map<std::string, LoadedModel> loaded_;
  std::mutex mu_;
  std::shared_ptr<Run> current_;
  std::thread thread_;
  int next_id_ = 0;
};

namespace {

void send_http_error(httplib::Response& res, const HttpError& e) { send_error(res, e.status, e.message); }

void handle_events(const httplib::Request& req, httplib::Response& res, LiveRuns& live) {
  int id = -1;
  if (req.has_param("id")) {
    const std::string v = req.get_param_value("id");
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
      send_error(res, 400, "events: 'id' must be a run number");
      return;
    }
    id = std::stoi(v);
  }
  auto run = live.find(id);
  if (!run) {
    send_error(res, 404, id < 0 ? "events: no run has been started" : "events: no run " + std::to_string(id) + " (only the latest run streams)");
    return;
  }
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Accel-Buffering", "no");
  ++run->listeners;
  auto next = std::make_shared<size_t>(0);
  res.set_chunked_content_provider(
      "text/event-stream",
      [run, next](size_t, httplib::DataSink& sink) {
        bool done = false;
        auto events = run->log->read(*next, std::chrono::milliseconds(1000), done);
        if (events.empty() && !done) return sink.write(": ping\n\n", 9);  // keeps the connection checked
        for (const auto& e : events) {
          if (!sink.write(e->data(), e->size())) return false;  // the page went away
          ++*next;
        }
        if (done) sink.done();
        return true;
      },
      [run](bool) { --run->listeners; });
}

}  // namespace

void register_live_routes(httplib::Server& server, VizContext& ctx) {
  if (!ctx.models.empty()) {
    const auto dirs = ctx.traces.dirs();
    ctx.live = std::make_shared<LiveRuns>(ctx.models, dirs.empty() ? fs::path("traces") : dirs.front(), ctx.engine,
                                          ctx.digest_cache_dir);
  }
  auto off = [](httplib::Response& res) {
    send_error(res, 404, "live runs are off: start minfer-viz with --model MODEL.gguf (repeatable)");
  };
  // Answers 200 either way, so the page can ask without a failed request in its console.
  server.Get("/api/run/models", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    if (!ctx.live)
      return send_json(res, {{"enabled", false}, {"models", json::array()}, {"busy", false}, {"run", nullptr},
                             {"reason", "live runs are off: start minfer-viz with --model MODEL.gguf (repeatable)"}});
    json j = ctx.live->models_json();
    j["enabled"] = true;
    send_json(res, j);
  });
  server.Post("/api/run", [&ctx, off](const httplib::Request& req, httplib::Response& res) {
    if (!ctx.live) return off(res);
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::exception&) {
      return send_error(res, 400, "run: the body is not valid JSON");
    }
    try {
      send_json(res, ctx.live->start(body), 202);
    } catch (const HttpError& e) {
      send_http_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, 500, std::string("run: ") + e.what());
    }
  });
  server.Post("/api/run/cancel", [&ctx, off](const httplib::Request&, httplib::Response& res) {
    if (!ctx.live) return off(res);
    const bool was = ctx.live->cancel();
    send_json(res, {{"cancelled", was}});
  });
  server.Get("/api/run/events", [&ctx, off](const httplib::Request& req, httplib::Response& res) {
    if (!ctx.live) return off(res);
    handle_events(req, res, *ctx.live);
  });
  server.Get("/api/vocab", [&ctx, off](const httplib::Request& req, httplib::Response& res) {
    if (!ctx.live) return off(res);
    try {
      res.set_header("Cache-Control", "max-age=3600");
      send_json(res, ctx.live->vocab(req.get_param_value("model"), req.get_param_value("ids")));
    } catch (const HttpError& e) {
      send_http_error(res, e);
    }
  });
}

}  // namespace minfer::viz
