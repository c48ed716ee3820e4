#include "cli/cli_trace.h"

#include <cstdio>

#include <filesystem>

#include "core/error.h"
#include "sha256.h"
#include "core/thread_pool.h"
#include "graph/build_graph.h"
#include "graph_json.h"
#include "recorder.h"

namespace minfer {
namespace {

// Per matmul node, the kernel the backend runs it with: in a prefill of several tokens, and in
// a decode step.
nlohmann::json matmul_kernels(const Model& m, const Backend& b) {
  nlohmann::json j = nlohmann::json::object();
  for (Phase ph : {Phase::Prefill, Phase::Decode}) {
    nlohmann::json per = nlohmann::json::object();
    for (const Node& n : make_graph(m, ph, ph == Phase::Prefill ? 2 : 1).nodes)
      if (n.executed() && (n.op == Op::MatMul || n.op == Op::Logits)) per[n.name] = b.matmul_kernel(n);
    j[phase_name(ph)] = per;
  }
  return j;
}

nlohmann::json run_meta(const CliOptions& o, const Model& m, const Backend& b) {
  const HParams& h = m.hp;
  nlohmann::json types = nlohmann::json::object();
  for (auto& [cls, t] : m.weight_type_summary()) types[cls] = t;
  std::string name;
  if (const GGUFValue* v = m.file->find("general.name"); v && v->type == GGUFValueType::STRING) name = v->s;
  return {
      {"model",
       {{"file", std::filesystem::path(o.model).filename().string()},
        {"sha256", trace::sha256_file(o.model, o.digest_cache_dir)},
        {"size_bytes", m.file->file_size()},
        {"architecture", architecture_name(h.arch)},
        {"name", name},
        {"hparams",
         {{"n_vocab", h.n_vocab}, {"n_ctx", h.n_ctx}, {"n_embd", h.n_embd}, {"n_layer", h.n_layer},
          {"n_head", h.n_head}, {"n_head_kv", h.n_head_kv}, {"head_dim", h.head_dim}, {"n_ff", h.n_ff},
          {"rope_base", h.rope_base}, {"rms_eps", h.rms_eps}, {"tied_embeddings", h.tied_embeddings}}},
        {"weight_types", types}}},
      {"backend", b.name()},
      {"device", b.device()},
      {"matmul_path", b.matmul_path_label()},
      {"cuda_graph", b.step_graphs()},
      {"summaries", b.summaries_computed_on()},
      {"matmul_kernels", matmul_kernels(m, b)},
      {"threads", ThreadPool::global().size()},
      {"prompt", o.prompt},
      {"sampler",
       {{"temperature", o.sampler.temperature}, {"top_k", o.sampler.top_k}, {"top_p", o.sampler.top_p},
        {"repeat_penalty", o.sampler.repeat_penalty}, {"repeat_last_n", o.sampler.repeat_last_n},
        {"seed", o.sampler.seed}, {"n_predict", o.n_predict}}},
  };
}

class RecorderSession final : public TraceSession {
 public:
  RecorderSession(trace::RecorderOptions opts, nlohmann::json meta, const Tokenizer& tok)
      : rec_(std::move(opts), std::move(meta), [&tok](int32_t id) { return tok.token_bytes(id); }) {}
  Observer* observer() override { return rec_.observer(); }
  std::string finish(const GenerateResult& r, double load_ms) override {
    nlohmann::json decode_ms = nlohmann::json::array();
    for (double s : r.decode_s) decode_ms.push_back(s * 1e3);
    rec_.finish({{"load_ms", load_ms}, {"prefill_ms", r.prefill_s * 1e3}, {"decode_ms", decode_ms},
                 {"prefill_tok_s", r.prefill_tok_s()}, {"decode_tok_s", r.decode_tok_s()}});
    return rec_.options().path;
  }

 private:
  trace::Recorder rec_;
};

}  // namespace

std::unique_ptr<TraceSession> TraceSession::maybe_start(const CliOptions& o, const Environment& env, const Model& m,
                                                        const Backend& b, const Tokenizer& tok,
                                                        const TraceExtras& x) {
  std::vector<std::string> args = o.trace_args;
  auto opts = trace::RecorderOptions::from_env_and_args(env, args);
  if (!args.empty()) fail("unknown option '", args[0], "'");
  return start(std::move(opts), o, m, b, tok, x);
}

std::unique_ptr<TraceSession> TraceSession::start(trace::RecorderOptions opts, const CliOptions& o, const Model& m,
                                                  const Backend& b, const Tokenizer& tok, const TraceExtras& x) {
  if (!opts.enabled()) return nullptr;
  nlohmann::json meta = run_meta(o, m, b);
  meta["prompt"] = x.prompt;
  if (x.reference) {  // A = this run, B = the reference; both fed the tokens A is fed
    const CompareTolerance tol;
    meta["compare"] = {{"path", x.reference->matmul_path_label()}, {"backend", x.reference->name()},
                       {"mode", "lockstep"}, {"teacher", "a"},
                       {"tolerance", {{"abs", tol.abs}, {"rel", tol.rel}}}, {"local", b.reruns_nodes()}};
  }
  if (x.replay) meta["tokens_from"] = {{"file", x.replay->file}, {"steps", x.replay->steps}};
  if (b.name() == "cuda") {  // which steps carry CUPTI kernel records, and why none when none
    const std::string why = b.kernel_records_unavailable();
    meta["cupti"] = {{"enabled", why.empty()},
                     {"reason", why.empty() ? nlohmann::json(nullptr) : nlohmann::json(why)},
                     {"steps", opts.kernel_steps},
                     {"other_steps", "events"}};
    // The probe needs 1 GiB of device memory for a moment: on a full device the trace goes
    // without the measured roof (the page then uses the nominal one) rather than failing the run.
    if (x.read_bandwidth_gbs) try {
        meta["device_limits"] = {{"read_gbs", x.read_bandwidth_gbs()},
                                 {"how", "Backend::read_bandwidth_gbs: device-to-device copies, bytes read + written"}};
      } catch (const std::exception& e) {
        std::fprintf(stderr, "minfer: trace: the device read probe failed (%s); meta.device_limits not recorded\n",
                     e.what());
      }
  }
  return std::make_unique<RecorderSession>(std::move(opts), std::move(meta), tok);
}

std::string graph_json_text(const Graph& g) { return trace::graph_to_json(g).dump(1) + "\n"; }

}  // namespace minfer
