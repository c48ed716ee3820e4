// minfer-bench: prefill (pp) and decode (tg) tokens/s as medians over repetitions.
//   minfer-bench MODEL [-p 128] [-n 64] [-d 0] [-r 5] [--threads T] [--backend auto|cpu|cuda] [--json]
//                [--trace PATH --trace-* ... | MINFER_TRACE*]
// -d D: the decode runs follow a prefill of D tokens (KV length D..D+n).
// A trace (the recorder's flags and variables, as minfer's) records every decode run, warm-up
// included, each into PATH (the last run's file stays): tg is then the recorded decode speed, in
// the same steady state as the untraced figure (the recording overhead; prefill runs untraced).
// MINFER_MMQ=0 benchmarks the float prefill path. Token ids are fixed pseudo-random values.
// Also reports the bytes a decode token reads (weights and KV cache), the bandwidth that
// achieves at the measured decode speed as a fraction of the measured read bandwidth (host
// memory for cpu, device memory for cuda), the decode floor those bytes set, and the memory the
// backend holds (its categories and, on cuda, the device memory in use). On cuda one more short
// decode run records one decode step's kernels (CUPTI) for a per-kernel-family breakdown.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/backend_choice.h"
#include "cli/trace_session.h"
#include "core/build_stamp.h"
#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/thread_pool.h"
#include "exec/generate.h"
#include "kernel_families.h"
#include "model/model.h"
#include "sha256.h"
#include "tokenizer/tokenizer.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int32_t> bench_tokens(int n, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  uint64_t s = 12345;
  for (auto& x : t) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<int32_t>((s >> 33) % static_cast<uint64_t>(std::min<int64_t>(vocab, 150000)));
  }
  return t;
}

// The backend's categories, "total" their sum, and the driver's measurement ("device_in_use",
// CUDA context included) beside them, not in the sum.
nlohmann::json memory_json(const minfer::MemoryReport& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [what, bytes] : m) j[what] = bytes;
  j["total"] = minfer::memory_categories_total(m);
  return j;
}

// Weight bytes one decode token reads: every weight once, but the embedding only as the one row
// it gathers when the model has its own output matrix (tied, it is read whole as the LM head).
int64_t decode_weight_bytes(const minfer::Model& m) {
  auto bytes = [](const minfer::WeightView& w) { return w.rows * static_cast<int64_t>(w.row_bytes); };
  int64_t b = bytes(m.output_norm) + bytes(m.output);
  if (!m.hp.tied_embeddings) b += static_cast<int64_t>(m.token_embd.row_bytes);
  for (const auto& l : m.layers)
    for (const minfer::WeightView* w : {&l.attn_norm, &l.wq, &l.bq, &l.wk, &l.bk, &l.wv, &l.bv, &l.wo,
                                        &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down, &l.q_norm, &l.k_norm})
      b += bytes(*w);  // absent ones (biases of qwen3/llama, QK-norm of qwen2/llama) are empty: 0 bytes
  return b;
}

// KV cache bytes a decode step attending `ctx` positions reads: K and V of every layer. Both
// backends keep the cache in f32 (cpu_backend.cpp, cuda_backend.cpp: [n_ctx][n_embd_kv] floats).
double decode_kv_bytes(const minfer::HParams& h, double ctx) {
  return 2.0 * static_cast<double>(h.n_layer) * static_cast<double>(h.n_embd_kv()) * sizeof(float) * ctx;
}

// Asks for the kernel records (CUPTI) of one decode step and keeps them; reads nothing else.
class KernelProbe final : public minfer::Observer {
 public:
  explicit KernelProbe(int step) : step_(step) {}
  minfer::StepRecording recording(const minfer::StepInfo& s) const override {
    minfer::StepRecording r;
    r.nodes = false;
    r.kernels = s.phase == minfer::Phase::Decode && s.step == step_;
    return r;
  }
  void on_node_view(const minfer::Node&, const minfer::NodeView&) override {}
  void on_gpu_time(const minfer::StepInfo& s, const minfer::StepGpuTime& t) override {
    if (s.phase == minfer::Phase::Decode && s.step == step_) time = t;
  }
  minfer::StepGpuTime time;

 private:
  int step_;
};

// One decode step's kernels, by family.
struct KernelBreakdown {
  minfer::trace::KernelFamilies families;
  minfer::StepGpuTime time;
  std::string unavailable;  // "" when families holds the step's records
};

// Bounds of -p, -n, -d and -r: far beyond any real benchmark, short of nonsense.
constexpr int64_t kMaxTokens = 1 << 20;
constexpr int64_t kMaxReps = 10000;

// The decode step profiled: a steady one, with a decode step before it and one after.
constexpr int kProfiledStep = 2;

// From a short decode run after `prompt` (the timed runs' depth); the reason instead when the
// backend has no kernel records (cpu, CUPTI unavailable).
KernelBreakdown profile_decode_step(const minfer::Model& m, minfer::Backend& b, const std::vector<int32_t>& prompt,
                                    bool graph_fusion) {
  KernelBreakdown k;
  k.unavailable = b.probes().kernel_records_unavailable();
  if (!k.unavailable.empty()) return k;
  KernelProbe probe(kProfiledStep);
  minfer::GenerateOptions o;
  o.n_predict = kProfiledStep + 2;  // the prefill's token, then decode steps 1..kProfiledStep + 1
  o.stop_at_eog = false;
  o.graph_fusion = graph_fusion;
  minfer::generate(m, b, nullptr, prompt, o, &probe);
  k.time = probe.time;
  k.families = minfer::trace::kernel_families(k.time.kernels);
  if (k.time.kernels.empty())
    k.unavailable = k.time.note.empty() ? "no kernel records came back for the profiled step" : k.time.note;
  return k;
}

// Per family: launches, µs (sums of CUPTI durations), share of the sum, mean µs per launch. A
// step is one token, so these are per token.
nlohmann::json kernel_families_json(const KernelBreakdown& k, size_t prompt_tokens) {
  nlohmann::json fams = nlohmann::json::array();
  for (const auto& f : k.families.families)
    fams.push_back({{"family", f.name}, {"launches_per_token", f.launches}, {"us_per_token", f.total_us},
                    {"share", k.families.sum_us > 0 ? f.total_us / k.families.sum_us : 0.0},
                    {"us_per_launch", f.total_us / f.launches}});
  return {{"profiled_step", kProfiledStep}, {"prompt_tokens", prompt_tokens}, {"launches_per_token", k.families.launches},
          {"sum_us", k.families.sum_us}, {"gpu_span_us", k.families.span_us},
          {"busy_us", k.time.busy_ms >= 0 ? nlohmann::json(k.time.busy_ms * 1e3) : nlohmann::json(nullptr)},
          {"dropped_records", k.time.dropped},
          {"note", "CUPTI durations; under PDL a kernel's duration includes the time it waits for its "
                   "predecessor, so sums and shares overstate kernels that start early and wait"},
          {"families", fams}};
}

void print_kernel_families(const KernelBreakdown& k) {
  if (!k.unavailable.empty()) {
    std::printf("kernel families: unavailable (%s)\n", k.unavailable.c_str());
    return;
  }
  const minfer::trace::KernelFamilies& f = k.families;
  std::printf("kernel families of one decode step: %d launches, %.1f us summed, %.1f us GPU span "
              "(CUPTI durations: under PDL they include the wait for the previous kernel)\n",
              f.launches, f.sum_us, f.span_us);
  std::printf("  %-36s %8s %10s %7s %10s\n", "family", "launches", "us/token", "share", "us/launch");
  for (const auto& x : f.families)
    std::printf("  %-36s %8d %10.2f %6.1f%% %10.2f\n", x.name.c_str(), x.launches, x.total_us,
                f.sum_us > 0 ? 100.0 * x.total_us / f.sum_us : 0.0, x.total_us / x.launches);
}

}  // namespace

#ifdef MINFER_PHASES  // the direct matvec's phase records (engine/cuda/matvec_phases.cuh)
namespace minfer::cuda { void dump_matvec_phases(const char* path); }
#endif
int main(int argc, char** argv) {
  try {
    std::string model_path, backend_choice = "auto";
    int pp = 128, tg = 64, reps = 5, threads = 0, depth = 0;
    bool json = false;
    minfer::Environment env = minfer::process_environment();  // the one read of the environment
    std::vector<std::string> args(argv + 1, argv + argc);
    const auto trace_opts = minfer::trace::RecorderOptions::from_env_and_args(env, args);  // removes --trace*
    const int n_args = static_cast<int>(args.size());
    for (int i = 0; i < n_args; ++i) {
      std::string a = args[static_cast<size_t>(i)];
      auto value = [&](int64_t lo, int64_t hi) -> int {
        if (i + 1 >= n_args) minfer::fail(a, " needs a value");
        return static_cast<int>(minfer::parse_int(args[static_cast<size_t>(++i)], a, lo, hi));
      };
      if (a == "-p") pp = value(1, kMaxTokens);
      else if (a == "-n") tg = value(1, kMaxTokens);
      else if (a == "-d") depth = value(0, kMaxTokens);
      else if (a == "-r") reps = value(1, kMaxReps);
      else if (a == "--threads") threads = value(1, minfer::kMaxThreads);
      else if (a == "--json") json = true;
      else if (a == "--backend") {
        if (i + 1 >= n_args) minfer::fail(a, " needs a value");
        backend_choice = minfer::parse_backend_flag(args[static_cast<size_t>(++i)]);
      }
      else if (!a.empty() && a[0] == '-') minfer::fail("unknown option '", a, "'");
      else model_path = a;
    }
    if (model_path.empty())
      minfer::fail("usage: minfer-bench MODEL [-p N] [-n N] [-d D] [-r R] [--threads T] [--backend auto|cpu|cuda] [--json] "
                   "[--trace PATH --trace-*...]");
    if (threads > 0) env.erase("MINFER_THREADS");  // the flag wins: the variable is not read
    const minfer::EngineOptions engine = minfer::EngineOptions::from_env(env);
    if (threads == 0) threads = engine.threads;
    minfer::ThreadPool::set_global_threads(threads);
    minfer::ThreadPool pool(threads);
    auto t0 = std::chrono::steady_clock::now();
    auto model = minfer::Model::load(model_path, &pool);
    double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto backend_ptr = minfer::make_backend(backend_choice, *model, engine.prefill, engine.cuda, &pool, json);
    minfer::Backend& backend = *backend_ptr;

    std::vector<double> pp_ts, tg_ts;
    minfer::GenerateOptions prefill_only;
    prefill_only.n_predict = 0;
    prefill_only.graph_fusion = engine.graph_fusion;
    minfer::GenerateOptions decode;
    decode.n_predict = tg + 1;  // the first token comes from the prefill
    decode.stop_at_eog = false;
    decode.graph_fusion = engine.graph_fusion;
    auto prompt = bench_tokens(pp, model->hp.n_vocab);
    // Decode runs after a prefill of `depth` tokens (-d): the KV length attention reads.
    const std::vector<int32_t> decode_prompt =
        depth > 0 ? bench_tokens(depth, model->hp.n_vocab) : std::vector<int32_t>{prompt[0]};
    // A decode run, recorded into a fresh trace when one was asked for.
    std::unique_ptr<minfer::Tokenizer> tok;
    minfer::CliOptions trace_run;  // what the trace's meta says about the run
    if (trace_opts.enabled()) {
      tok = minfer::Tokenizer::from_gguf(*model->file);
      trace_run.model = model_path;
      trace_run.digest_cache_dir = minfer::trace::digest_cache_dir(env);
      trace_run.prompt = "(minfer-bench: " + std::to_string(decode_prompt.size()) + " pseudo-random token ids)";
      trace_run.n_predict = decode.n_predict;
      trace_run.sampler = decode.sampler;
    }
    auto decode_run = [&] {
      if (!trace_opts.enabled()) return minfer::generate(*model, backend, nullptr, decode_prompt, decode, nullptr);
      auto session = minfer::TraceSession::start(trace_opts, trace_run, *model, backend, *tok, {trace_run.prompt});
      minfer::GenerateResult r = minfer::generate(*model, backend, tok.get(), decode_prompt, decode, session->observer());
      session->finish(r, load_ms);
      return r;
    };
    // One warm-up run of each, not counted (page faults of the mapped weights, graph capture).
    minfer::generate(*model, backend, nullptr, prompt, prefill_only, nullptr);
    decode_run();
    for (int r = 0; r < reps; ++r) {
      pp_ts.push_back(minfer::generate(*model, backend, nullptr, prompt, prefill_only, nullptr).prefill_tok_s());
      tg_ts.push_back(decode_run().decode_tok_s());
    }
    const double tg_tok_s = median(tg_ts);
    // A decode step at position p attends p + 1 positions: over the timed steps (p from the
    // prompt's length on, tg of them) that is prompt + (tg + 1) / 2 on average.
    const double kv_ctx = static_cast<double>(decode_prompt.size()) + (tg + 1) / 2.0;
    const int64_t weight_bytes = decode_weight_bytes(*model);
    const double kv_bytes = decode_kv_bytes(model->hp, kv_ctx);
    const double bytes_per_token = static_cast<double>(weight_bytes) + kv_bytes;
    const double bw = read_bandwidth_gbs(backend);
    const double floor_tok_s = bw * 1e9 / bytes_per_token;
    const double achieved_gb_s = bytes_per_token * tg_tok_s / 1e9;
    const KernelBreakdown kernels = profile_decode_step(*model, backend, decode_prompt, engine.graph_fusion);
    nlohmann::json j = {
        {"model", model_path}, {"backend", backend.name()}, {"device", backend.device()},
        {"matmul_path", backend.matmul_path_label()},
        {"threads", pool.size()}, {"load_ms", load_ms}, {"repetitions", reps},
        {"step_graphs", backend.step_graphs()}, {"chained_decode", backend.chains_greedy_token()},
        {"backend_memory_bytes", memory_json(backend.memory())},
        {"decode_kernels_per_token", backend.decode_kernels()},
        {"us_per_decode_kernel", backend.decode_kernels() > 0 ? 1e6 / tg_tok_s / backend.decode_kernels() : 0.0},
        {"pp", {{"tokens", pp}, {"median_tok_s", median(pp_ts)}, {"runs_tok_s", pp_ts}}},
        {"tg", {{"tokens", tg}, {"depth", depth}, {"median_tok_s", tg_tok_s}, {"runs_tok_s", tg_ts}}},
        {"trace", trace_opts.enabled() ? trace_opts.to_json() : nlohmann::json(nullptr)},
        {"bytes_per_token", bytes_per_token},
        {"achieved_gb_s", achieved_gb_s},
        {"fraction_of_read_bw", achieved_gb_s / bw},
        {"memory", {{"read_gb_s", bw}, {"weight_bytes_per_token", weight_bytes},
                    {"kv_bytes_per_token", kv_bytes}, {"kv_mean_context", kv_ctx}, {"kv_dtype", "f32"},
                    {"decode_floor_tok_s", floor_tok_s}, {"tg_fraction_of_floor", tg_tok_s / floor_tok_s}}},
        {"kernel_families", kernels.unavailable.empty() ? kernel_families_json(kernels, decode_prompt.size())
                                                        : nlohmann::json(nullptr)},
        {"kernel_families_unavailable", kernels.unavailable.empty() ? nlohmann::json(nullptr) : nlohmann::json(kernels.unavailable)},
        {"minfer_version", MINFER_VERSION}, {"commit", MINFER_GIT_COMMIT}};
#ifdef MINFER_PHASES
    minfer::cuda::dump_matvec_phases("phases.csv");
#endif
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
      if (!kernels.unavailable.empty()) std::fprintf(stderr, "minfer-bench: no kernel families: %s\n", kernels.unavailable.c_str());
    } else {
      std::printf("%s | %s | %s path | pp%d: %.2f tok/s | tg%d: %.2f tok/s (median of %d) | "
                  "%.1f MB/token (weights %.1f, KV %.1f): %.1f GB/s of %.1f GB/s read = %.0f%% | floor %.1f tok/s\n",
                  model_path.c_str(), backend.device().c_str(), backend.matmul_path_label().c_str(),
                  pp, median(pp_ts), tg, tg_tok_s, reps, bytes_per_token / 1e6, weight_bytes / 1e6, kv_bytes / 1e6,
                  achieved_gb_s, bw, 100.0 * achieved_gb_s / bw, floor_tok_s);
      print_kernel_families(kernels);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer-bench: error: %s\n", e.what());
    return 1;
  }
}
