#include "cli/cli_args.h"

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "cli/backend_choice.h"
#include "core/error.h"
#include "recorder_options.h"

namespace minfer {
namespace {

long long to_int(const std::string& flag, const std::string& v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > hi)
    fail(flag, ": expected an integer in [", lo, ", ", hi, "], got '", v, "'");
  return x;
}

double to_float(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end) fail(flag, ": expected a number, got '", v, "'");
  return x;
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
         "env: MINFER_TRACE=FILE records a trace; MINFER_MMQ=0 selects the float prefill path;\n"
         "     MINFER_COMPARE_PATH=P is --compare-path P;\n"
         "     MINFER_THREADS=N; MINFER_NO_FUSION=1; MINFER_NO_CUDA_GRAPH=1 runs decode eagerly;\n"
         "     MINFER_CUDA_FUSION=0 runs the unfused decode kernels; MINFER_NO_CUPTI=1 records no\n"
         "     kernel timings in CUDA traces\n";
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
    if (f == "-n" || f == "--n-predict") o.n_predict = static_cast<int>(to_int(f, value(f), 0, 1 << 20));
    else if (f == "--temp") o.sampler.temperature = static_cast<float>(to_float(f, value(f)));
    else if (f == "--top-k") o.sampler.top_k = static_cast<int>(to_int(f, value(f), 0, 1 << 24));
    else if (f == "--top-p") o.sampler.top_p = static_cast<float>(to_float(f, value(f)));
    else if (f == "--repeat-penalty") o.sampler.repeat_penalty = static_cast<float>(to_float(f, value(f)));
    else if (f == "--seed") o.sampler.seed = static_cast<uint64_t>(to_int(f, value(f), 0, (1LL << 62)));
    else if (f == "--threads") o.threads = static_cast<int>(to_int(f, value(f), 1, 1024));
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
