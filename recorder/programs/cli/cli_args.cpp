#include "cli/cli_args.h"

#include <string_view>

#include "cli/backend_choice.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/thread_pool.h"
#include "recorder_options.h"

namespace minfer {
namespace {

// Upper bounds of the generation flags: far beyond any real use, short of nonsense.
constexpr int64_t kMaxTokens = 1 << 20;
constexpr int64_t kMaxTopK = 1 << 24;
constexpr double kMaxTemperature = 100;  // past ~10 sampling is uniform anyway
constexpr double kMaxRepeatPenalty = 100;

int int_flag(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  return static_cast<int>(parse_int(v, flag, lo, hi));
}

float float_flag(const std::string& flag, const std::string& v, double lo, double hi) {
  return static_cast<float>(parse_number(v, flag, lo, hi));
}

}  // namespace

const char* cli_usage() {
  return "usage: minfer MODEL.gguf PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]\n"
         "              [--repeat-penalty R] [--seed S] [--threads T] [--backend auto|cpu|cuda]\n"
         "              [--dump-graph FILE] [--trace FILE] [--trace-nodes PATTERN]\n"
         "              [--trace-grid ROWSxCOLS] [--trace-bins N] [--trace-topk K]\n"
         "              [--trace-steps LIST] [--trace-stats-only] [--trace-outliers K]\n"
         "              [--trace-kernels LIST] [--trace-step-by-step]\n"
         "              [--compare-path mmq|f32|f16] [--tokens-from TRACE.json]\n"
         "       minfer MODEL.gguf --tokens-from TRACE.json [...]   (the trace's prompt)\n"
         "       minfer tokenize MODEL.gguf (TEXT | --file F)\n"
         "backend: auto (default) = cuda when a usable GPU exists, else cpu\n"
         "--compare-path P: record both matmul paths in lockstep on the same tokens (a paired trace:\n"
         "     the run's path against P; f16 and f32 both name the float path, recorded by the name\n"
         "     the backend gives it: f32 on cpu, f16 on cuda); needs --trace\n"
         "--tokens-from T: feed the prompt and generated tokens of trace T (teacher forcing), so two\n"
         "     separately recorded traces stay aligned; stops when T's tokens run out\n"
         "env: MINFER_TRACE=FILE records a trace; MINFER_MMQ=0 selects the float prefill path,\n"
         "     MINFER_MMQ=1 the int8 MMQ one (unset: MMQ, or f16 on sm_90 where it takes every weight);\n"
         "     MINFER_COMPARE_PATH=P is --compare-path P;\n"
         "     MINFER_THREADS=N (1 to 1024; --threads wins); MINFER_NO_FUSION=1;\n"
         "     MINFER_NO_CUDA_GRAPH=1 runs decode eagerly; MINFER_CUDA_FUSION=0 runs the unfused decode\n"
         "     kernels; MINFER_NO_CUPTI=1 records no kernel timings in CUDA traces\n";
}

CliOptions parse_cli(int argc, char** argv) {
  CliOptions o;
  std::vector<std::string> a(argv + 1, argv + argc);
  std::vector<std::string> pos;
  size_t i = 0;
  if (!a.empty() && a[0] == "tokenize") {
    o.mode = CliOptions::Mode::Tokenize;
    i = 1;
  }
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= a.size()) fail(flag, " needs a value");
    return a[++i];
  };
  for (; i < a.size(); ++i) {
    const std::string& f = a[i];
    if (f == "-h" || f == "--help") { o.mode = CliOptions::Mode::Help; return o; }
    if (f == "--version") { o.mode = CliOptions::Mode::Version; return o; }
    if (f == "-n" || f == "--n-predict") o.n_predict = int_flag(f, value(f), 0, kMaxTokens);
    else if (f == "--temp") o.sampler.temperature = float_flag(f, value(f), 0, kMaxTemperature);
    else if (f == "--top-k") o.sampler.top_k = int_flag(f, value(f), 0, kMaxTopK);
    else if (f == "--top-p") o.sampler.top_p = float_flag(f, value(f), 0, 1);
    else if (f == "--repeat-penalty") o.sampler.repeat_penalty = float_flag(f, value(f), 0, kMaxRepeatPenalty);
    else if (f == "--seed") o.sampler.seed = parse_uint(value(f), f, 0, uint64_t(1) << 62);
    else if (f == "--threads") o.threads = int_flag(f, value(f), 1, kMaxThreads);
    else if (f == "--backend") o.backend = parse_backend_flag(value(f));
    else if (f == "--dump-graph") o.dump_graph = value(f);
    else if (f == "--file") o.prompt_file = value(f);
    else if (f == "--quiet") o.stats_only_output = true;
    else if (f == "--compare-path") o.compare_path = value(f);
    else if (f == "--tokens-from") o.tokens_from = value(f);
    else if (trace::RecorderOptions::is_trace_switch(f) || (f.rfind("--trace", 0) == 0 && f.find('=') != std::string::npos))
      o.trace_args.push_back(f);  // the recorder parses --trace-x=value itself
    else if (f.rfind("--trace", 0) == 0) {
      o.trace_args.push_back(f);
      o.trace_args.push_back(value(f));
    } else if (f.size() > 1 && f[0] == '-' && f != "-") fail("unknown option '", f, "'");
    else pos.push_back(f);
  }
  if (pos.empty()) fail("missing MODEL argument");
  o.model = pos[0];
  if (o.mode == CliOptions::Mode::Tokenize) {
    if (pos.size() > 2 || (pos.size() == 2) == !o.prompt_file.empty())
      fail("tokenize takes MODEL and either TEXT or --file F");
    if (pos.size() == 2) o.prompt = pos[1];
    return o;
  }
  if (pos.size() > 2) fail("unexpected argument '", pos[2], "' (quote the prompt)");
  if (pos.size() == 2 && !o.prompt_file.empty()) fail("give the prompt either as PROMPT or with --file, not both");
  if (pos.size() < 2 && o.prompt_file.empty() && o.tokens_from.empty())
    fail("missing PROMPT argument (or --file F, or --tokens-from TRACE)");
  if (pos.size() == 2) o.prompt = pos[1];
  return o;
}

}  // namespace minfer
