#include "cli/run_meta.h"

#include <cstdio>

#include <filesystem>

#include "core/thread_pool.h"
#include "graph/build_graph.h"
#include "probes/tensor_compare.h"
#include "sha256.h"

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

}  // namespace

nlohmann::json run_meta(const Model& m, const Backend& b, const RunSettings& s, const TraceExtras& x) {
  const HParams& h = m.hp;
  nlohmann::json types = nlohmann::json::object();
  for (auto& [cls, t] : m.weight_type_summary()) types[cls] = t;
  std::string name;
  if (const GGUFValue* v = m.file->find("general.name"); v && v->type == GGUFValueType::STRING) name = v->s;
  const SamplerOptions& so = s.sampler;
  nlohmann::json meta = {
      {"model",
       {{"file", std::filesystem::path(s.model_path).filename().string()},
        {"sha256", trace::sha256_file(s.model_path, s.digest_cache_dir)},
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
      {"summaries", s.backend_records ? b.probes().summaries_computed_on() : "host"},
      {"matmul_kernels", matmul_kernels(m, b)},
      {"threads", ThreadPool::global().size()},
      {"prompt", x.prompt},
      {"sampler",
       {{"temperature", so.temperature}, {"top_k", so.top_k}, {"top_p", so.top_p},
        {"repeat_penalty", so.repeat_penalty}, {"repeat_last_n", so.repeat_last_n},
        {"seed", so.seed}, {"n_predict", s.n_predict}}},
  };
  if (x.reference) {  // A = this run, B = the reference; both fed the tokens A is fed
    const CompareTolerance tol;
    meta["compare"] = {{"path", x.reference->matmul_path_label()}, {"backend", x.reference->name()},
                       {"mode", "lockstep"}, {"teacher", "a"},
                       {"tolerance", {{"abs", tol.abs}, {"rel", tol.rel}}}, {"local", b.probes().reruns_nodes()}};
  }
  if (x.replay) meta["tokens_from"] = {{"file", x.replay->file}, {"steps", x.replay->steps}};
  if (b.name() == "cuda") {  // which steps carry CUPTI kernel records, and why none when none
    std::string why = b.probes().kernel_records_unavailable();
    if (why.empty() && !s.backend_records) why = "this recording does not ask the backend for kernel records (a live run)";
    meta["cupti"] = {{"enabled", why.empty()},
                     {"reason", why.empty() ? nlohmann::json(nullptr) : nlohmann::json(why)},
                     {"steps", s.backend_records ? s.kernel_steps : std::string("none")},
                     {"other_steps", s.backend_records ? "events" : "none"}};
    // The probe needs 1 GiB of device memory for a moment: on a full device the trace goes
    // without the measured roof (the page then uses the nominal one) rather than failing the run.
    if (x.read_bandwidth_gbs) try {
        // The "how" names the probe as traces have always named it (the trace bytes stay the same).
        meta["device_limits"] = {{"read_gbs", x.read_bandwidth_gbs()},
                                 {"how", "Backend::read_bandwidth_gbs: device-to-device copies, bytes read + written"}};
      } catch (const std::exception& e) {
        std::fprintf(stderr, "minfer: trace: the device read probe failed (%s); meta.device_limits not recorded\n",
                     e.what());
      }
  }
  return meta;
}

}  // namespace minfer
