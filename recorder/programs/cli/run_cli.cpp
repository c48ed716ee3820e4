#include "cli/run_cli.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/backend_choice.h"
#include "cli/cli_args.h"
#include "cli/tokens_from.h"
#include "cli/trace_session.h"
#include "core/build_stamp.h"
#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "exec/generate.h"
#include "graph/build_graph.h"
#include "format/graph_json.h"
#include "model/model.h"
#include "output_file.h"
#include "recorder_options.h"
#include "sha256.h"
#include "tokenizer/tokenizer.h"
#include "format/trace_input.h"

namespace minfer {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int run_tokenize(const CliOptions& o) {
  auto file = GGUFFile::open(o.model);
  auto tok = Tokenizer::from_gguf(*file);
  const std::string text = o.prompt_file.empty() ? o.prompt : read_file(o.prompt_file);
  auto ids = tok->encode_prompt(text);
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  std::printf("%s]\n", out.c_str());
  trace::finish_stdout();  // ids lost to a full disk or closed pipe are an error, not exit 0
  return 0;
}

// JSON of a graph with the fields of --dump-graph (those of the trace's graphs).
std::string graph_json_text(const Graph& g) { return trace::graph_to_json(g).dump(1) + "\n"; }

// Never renames over a device (--dump-graph /dev/null); every write is checked.
void write_text_file(const std::string& path, const std::string& text) { trace::write_output_file(path, text); }

// --compare-path (or MINFER_COMPARE_PATH): the reference path of a paired run as named; empty
// when none was asked for.
std::string compare_path_name(const CliOptions& o, const Environment& env) {
  return !o.compare_path.empty() ? o.compare_path : env_text(env, "MINFER_COMPARE_PATH");
}
std::optional<MatmulPath> compare_path(const CliOptions& o, const Environment& env) {
  const std::string name = compare_path_name(o, env);
  if (name.empty()) return std::nullopt;
  return parse_matmul_path(name, o.compare_path.empty() ? "MINFER_COMPARE_PATH" : "--compare-path");
}

// The reference backend of a paired run on path p, of the same kind as the main one.
std::unique_ptr<Backend> reference_backend(const CliOptions& o, const Environment& env, const EngineOptions& engine,
                                           const Model& m, const Backend& main, MatmulPath p) {
  const std::string name = compare_path_name(o, env);
  auto ref = make_backend(main.name(), m, p, engine.cuda, nullptr, /*quiet=*/true);
  if (ref->matmul_path_label() != name)
    std::fprintf(stderr, "compare: '%s' names the float path; on %s it computes in %s and is recorded as %s\n",
                 name.c_str(), ref->name().c_str(), ref->matmul_path_label().c_str(), ref->matmul_path_label().c_str());
  std::fprintf(stderr, "compare: %s path (A) against %s path (reference B), in lockstep on A's tokens\n",
               main.matmul_path_label().c_str(), ref->matmul_path_label().c_str());
  return ref;
}

int run_generate(CliOptions o) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  // The environment, read once: every variable is checked before any work, whichever backend
  // runs. --threads wins over MINFER_THREADS, which is then not read.
  Environment env = process_environment();
  if (o.threads > 0) env.erase("MINFER_THREADS");
  EngineOptions engine = EngineOptions::from_env(env);
  if (o.threads > 0) engine.threads = o.threads;
  ThreadPool::set_global_threads(engine.threads);
  o.digest_cache_dir = trace::digest_cache_dir(env);
  auto model = Model::load(o.model, &ThreadPool::global());  // the weights' NaN/Inf scan, on every core
  auto tok = Tokenizer::from_gguf(*model->file);
  // A paired run whose main path is not given takes the other one: the backend's default could
  // be the reference's own path (f16 on sm_90 for Q4_0 / Q8_0) and compare a path with itself.
  const std::optional<MatmulPath> ref_path = compare_path(o, env);
  if (ref_path && !engine.prefill) engine.prefill = *ref_path == MatmulPath::MMQ ? MatmulPath::Float : MatmulPath::MMQ;
  auto backend = make_backend(o.backend, *model, engine.prefill, engine.cuda);
  auto reference = ref_path ? reference_backend(o, env, engine, *model, *backend, *ref_path) : nullptr;
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();

  std::optional<ReplayTokens> replay;
  if (!o.tokens_from.empty())
    replay = load_replay_tokens(o.tokens_from, trace::sha256_file(o.model, o.digest_cache_dir), model->hp.n_vocab,
                                trace::default_max_trace_bytes(env));
  std::string text = o.prompt_file.empty() ? o.prompt : read_file(o.prompt_file);
  const bool have_text = !o.prompt_file.empty() || !o.prompt.empty();
  std::vector<int32_t> prompt = have_text || !replay ? tok->encode_prompt(text) : replay->prompt;
  if (replay) {
    if (prompt != replay->prompt)
      fail("--tokens-from ", o.tokens_from, ": the prompt encodes to ", prompt.size(),
           " tokens that differ from the trace's ", replay->prompt.size(), " prefill tokens (give the same prompt, or none)");
    if (!have_text) text = replay->prompt_text;
  }
  if (prompt.empty()) fail("the prompt encodes to no tokens");
  if (static_cast<int64_t>(prompt.size()) > model->hp.n_ctx)
    fail("the prompt has ", prompt.size(), " tokens, more than the model's context of ",
         model->hp.n_ctx, " (", architecture_name(model->hp.arch), ".context_length)");
  if (!o.dump_graph.empty())
    write_text_file(o.dump_graph,
                    graph_json_text(make_graph(*model, Phase::Prefill, static_cast<int>(prompt.size()), engine.graph_fusion)));

  auto trace = TraceSession::maybe_start(o, env, *model, *backend, *tok,
                                         TraceExtras{text, reference.get(), replay ? &*replay : nullptr,
                                                     [&] { return read_bandwidth_gbs(*backend); }});
  if (reference && !trace)
    fail("--compare-path records a paired trace: give --trace FILE (or MINFER_TRACE=FILE)");
  GenerateOptions g;
  g.n_predict = o.n_predict;
  g.sampler = o.sampler;
  g.reference = reference.get();
  g.graph_fusion = engine.graph_fusion;
  if (replay) g.forced = replay->generated;
  if (!o.stats_only_output) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  auto r = generate(*model, *backend, tok.get(), prompt, g, trace ? trace->observer() : nullptr,
                    [&](int32_t id) {
                      if (o.stats_only_output) return;
                      std::string s = tok->token_bytes(id);
                      std::fwrite(s.data(), 1, s.size(), stdout);
                      std::fflush(stdout);
                    });
  if (!o.stats_only_output) std::printf("\n");
  if (r.forced_ran_out)
    std::fprintf(stderr, "tokens-from: %s has %zu generated tokens; stopped there (-n %d)\n",
                 replay->file.c_str(), replay->generated.size(), o.n_predict);
  std::fprintf(stderr, "load: %.1f ms | prefill: %zu tokens, %.2f tokens/s | decode: %zu tokens, %.2f tokens/s | %s, %s path\n",
               load_ms, r.prompt.size(), r.prefill_tok_s(), r.decode_s.size(), r.decode_tok_s(),
               backend->name().c_str(), backend->matmul_path_label().c_str());
  print_backend_memory(*backend, "after the run");
  if (trace) std::fprintf(stderr, "trace: %s\n", trace->finish(r, load_ms).c_str());
  trace::finish_stdout();  // generated text lost to a full disk or closed pipe is an error
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CliOptions o = parse_cli(argc, argv);
  switch (o.mode) {
    case CliOptions::Mode::Help:
      std::fputs(cli_usage(), stdout);
      std::fputs(trace::RecorderOptions::usage(), stdout);
      return 0;
    case CliOptions::Mode::Version: std::printf("minfer %s (%s)\n", MINFER_VERSION, MINFER_GIT_COMMIT); return 0;
    case CliOptions::Mode::Tokenize: return run_tokenize(o);
    case CliOptions::Mode::Generate: return run_generate(o);
  }
  return 2;
}

}  // namespace minfer
