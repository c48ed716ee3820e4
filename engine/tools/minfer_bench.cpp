// minfer-bench: prefill (pp) and decode (tg) tokens/s as medians over repetitions.
//   minfer-bench MODEL [-p 128] [-n 64] [-d 0] [-r 5] [--threads T] [--backend auto|cpu|cuda] [--json]
//                [--trace PATH --trace-* ... | MINFER_TRACE*]
// -d D: the decode runs follow a prefill of D tokens (KV length D..D+n).
// A trace (the recorder's flags and variables, as minfer's) records every decode run, warm-up
// included, each into PATH (the last run's file stays): tg is then the recorded decode speed, in
// the same steady state as the untraced figure (the recording overhead; prefill runs untraced).
// MINFER_MMQ=0 benchmarks the float prefill path. Token ids are fixed pseudo-random values.
// Also reports the decode floor: weight bytes streamed per token over the measured read
// bandwidth (host memory for cpu, device memory for cuda), the decode speed as a fraction of
// it, and the memory the backend holds (its categories and, on cuda, the device memory in use).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cli/backend_choice.h"
#include "cli/cli_trace.h"
#include "exec/generate.h"
#include "model/model.h"
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

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string model_path, backend_choice = "auto";
    int pp = 128, tg = 64, reps = 5, threads = 0, depth = 0;
    bool json = false;
    std::vector<std::string> args(argv + 1, argv + argc);
    const auto trace_opts = minfer::trace::RecorderOptions::from_env_and_args(args);  // removes --trace*
    const int n_args = static_cast<int>(args.size());
    for (int i = 0; i < n_args; ++i) {
      std::string a = args[static_cast<size_t>(i)];
      auto value = [&]() -> int {
        if (i + 1 >= n_args) minfer::fail(a, " needs a value");
        return std::stoi(args[static_cast<size_t>(++i)]);
      };
      if (a == "-p") pp = value();
      else if (a == "-n") tg = value();
      else if (a == "-d") depth = value();
      else if (a == "-r") reps = value();
      else if (a == "--threads") threads = value();
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
    if (reps < 1 || pp < 1 || tg < 1 || depth < 0) minfer::fail("-p, -n and -r must be >= 1, -d >= 0");
    minfer::ThreadPool pool(threads);
    auto t0 = std::chrono::steady_clock::now();
    auto model = minfer::Model::load(model_path);
    double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto backend_ptr = minfer::make_backend(backend_choice, *model, minfer::matmul_path_from_env(), &pool, json);
    minfer::Backend& backend = *backend_ptr;

    std::vector<double> pp_ts, tg_ts;
    minfer::GenerateOptions prefill_only;
    prefill_only.n_predict = 0;
    minfer::GenerateOptions decode;
    decode.n_predict = tg + 1;  // the first token comes from the prefill
    decode.stop_at_eog = false;
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
    // Every weight is read once per decode token (the tied embedding once, as the output matrix).
    size_t weight_bytes = 0;
    for (const auto& t : model->file->tensors()) weight_bytes += t.nbytes;
    const double bw = backend.read_bandwidth_gbs();
    const double floor_tok_s = bw * 1e9 / static_cast<double>(weight_bytes);
    nlohmann::json j = {
        {"model", model_path}, {"backend", backend.name()}, {"device", backend.device()},
        {"matmul_path", backend.matmul_path_label()},
        {"threads", pool.size()}, {"load_ms", load_ms}, {"repetitions", reps},
        {"step_graphs", backend.step_graphs()}, {"chained_decode", backend.chains_greedy_token()},
        {"backend_memory_bytes", memory_json(backend.memory())},
        {"decode_kernels_per_token", backend.decode_kernels()},
        {"us_per_decode_kernel", backend.decode_kernels() > 0 ? 1e6 / median(tg_ts) / backend.decode_kernels() : 0.0},
        {"pp", {{"tokens", pp}, {"median_tok_s", median(pp_ts)}, {"runs_tok_s", pp_ts}}},
        {"tg", {{"tokens", tg}, {"depth", depth}, {"median_tok_s", median(tg_ts)}, {"runs_tok_s", tg_ts}}},
        {"trace", trace_opts.enabled() ? trace_opts.to_json() : nlohmann::json(nullptr)},
        {"memory", {{"read_gb_s", bw}, {"weight_bytes_per_token", weight_bytes},
                    {"decode_floor_tok_s", floor_tok_s}, {"tg_fraction_of_floor", median(tg_ts) / floor_tok_s}}},
        {"minfer_version", MINFER_VERSION}, {"commit", MINFER_GIT_COMMIT}};
    if (json) std::printf("%s\n", j.dump(2).c_str());
    else
      std::printf("%s | %s | %s path | pp%d: %.2f tok/s | tg%d: %.2f tok/s (median of %d) | "
                  "floor %.1f tok/s (%.0f MB/token at %.1f GB/s): %.0f%%\n",
                  model_path.c_str(), backend.device().c_str(), backend.matmul_path_label().c_str(),
                  pp, median(pp_ts), tg, median(tg_ts), reps, floor_tok_s, weight_bytes / 1e6, bw,
                  100.0 * median(tg_ts) / floor_tok_s);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer-bench: error: %s\n", e.what());
    return 1;
  }
}
