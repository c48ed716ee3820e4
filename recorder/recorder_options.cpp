#include "recorder_options.h"

#include "core/error.h"
#include "core/parse_number.h"
#include "selection.h"

namespace minfer::trace {

SummarySpec RecorderOptions::spec() const {
  SummarySpec s;
  s.stats = true;
  s.grid_rows = stats_only ? 0 : grid_rows;
  s.grid_cols = stats_only ? 0 : grid_cols;
  s.hist_bins = stats_only ? 0 : hist_bins;
  return s;
}

nlohmann::json RecorderOptions::to_json() const {
  return {{"grid_rows", grid_rows}, {"grid_cols", grid_cols}, {"hist_bins", hist_bins},
          {"top_k", top_k},         {"nodes", nodes},         {"steps", steps},
          {"stats_only", stats_only}, {"outliers", outliers}, {"kernel_steps", kernel_steps},
          {"step_by_step", step_by_step}};
}

const char* RecorderOptions::usage() {
  return "Tracing (environment variable / flag; flags win):\n"
         "  MINFER_TRACE=PATH            --trace PATH          record a trace (.json or .json.gz)\n"
         "  MINFER_TRACE_NODES=PATTERNS  --trace-nodes P       node names, comma-separated globs\n"
         "                                                     (e.g. 'blk.*.attn_*,logits'; default all)\n"
         "  MINFER_TRACE_GRID=RxC        --trace-grid RxC      value grid cap (default 32x64; 0 = none)\n"
         "  MINFER_TRACE_BINS=N          --trace-bins N        histogram bins (default 32; 0 = none)\n"
         "  MINFER_TRACE_TOPK=K          --trace-topk K        logits top-k per step (default 20)\n"
         "  MINFER_TRACE_STEPS=LIST      --trace-steps LIST    steps with node records: all, none,\n"
         "                                                     prefill, decode, 0-3,10, 5- (default all)\n"
         "  MINFER_TRACE_STATS_ONLY=1    --trace-stats-only    statistics only (no grids, histograms)\n"
         "  MINFER_TRACE_OUTLIERS=K      --trace-outliers K    largest-|x| elements per node (default 8)\n"
         "  MINFER_TRACE_KERNELS=LIST    --trace-kernels LIST  steps with per-kernel GPU records (CUPTI;\n"
         "                                                     cuda only; default 0-1; none = off)\n"
         "  MINFER_TRACE_STEP_BY_STEP=1  --trace-step-by-step  each step safe before the next runs, no\n"
         "                                                     chaining (a kill loses at most one step;\n"
         "                                                     slower). A killed CUDA run: minfer-trace recover\n";
}

namespace {

int parse_count(const std::string& v, const std::string& what, int max) {
  return static_cast<int>(parse_int(v, what, 0, max));
}

bool parse_bool(const std::string& v, const std::string& what) {
  if (v == "1" || v == "true" || v == "yes" || v == "on" || v.empty()) return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  fail(what, ": '", v, "' is not a boolean (use 1/0, true/false)");
}

void parse_grid(const std::string& v, const std::string& what, RecorderOptions& o) {
  if (v == "0" || v == "none") {
    o.grid_rows = o.grid_cols = 0;
    return;
  }
  const size_t x = v.find_first_of("xX");
  if (x == std::string::npos) fail(what, ": '", v, "' is not ROWSxCOLS (e.g. 32x64) or 0");
  o.grid_rows = parse_count(v.substr(0, x), what + " (rows)", 4096);
  o.grid_cols = parse_count(v.substr(x + 1), what + " (cols)", 65536);
}

// One option, as it may come from the environment or a flag.
void apply(RecorderOptions& o, const std::string& key, const std::string& v, const std::string& what) {
  if (key == "trace") {
    if (v.empty()) fail(what, ": empty path");
    o.path = v;
  } else if (key == "nodes") {
    NodeFilter check(v, what);  // reject bad lists now, not mid-run
    o.nodes = v;
  } else if (key == "grid") {
    parse_grid(v, what, o);
  } else if (key == "bins") {
    o.hist_bins = parse_count(v, what, 4096);
  } else if (key == "topk" || key == "top-k") {
    o.top_k = parse_count(v, what, 100000);
  } else if (key == "steps") {
    StepFilter check(v, what);
    o.steps = v;
  } else if (key == "kernels") {
    StepFilter check(v, what);
    o.kernel_steps = v;
  } else if (key == "outliers") {
    o.outliers = parse_count(v, what, 1024);
  } else if (key == "stats-only") {
    o.stats_only = parse_bool(v, what);
  } else if (key == "step-by-step") {
    o.step_by_step = parse_bool(v, what);
  } else {
    fail("unknown option ", what, "\n", RecorderOptions::usage());
  }
}

// Every MINFER_TRACE* variable and the option it sets (the same as its --trace-* flag).
constexpr std::pair<const char*, const char*> kEnv[] = {
    {"MINFER_TRACE", "trace"},       {"MINFER_TRACE_NODES", "nodes"},
    {"MINFER_TRACE_GRID", "grid"},   {"MINFER_TRACE_BINS", "bins"},
    {"MINFER_TRACE_TOPK", "topk"},   {"MINFER_TRACE_STEPS", "steps"},
    {"MINFER_TRACE_STATS_ONLY", "stats-only"}, {"MINFER_TRACE_OUTLIERS", "outliers"}, {"MINFER_TRACE_KERNELS", "kernels"},
    {"MINFER_TRACE_STEP_BY_STEP", "step-by-step"}};

}  // namespace

bool RecorderOptions::is_trace_switch(std::string_view a) {
  return a == "--trace-stats-only" || a == "--trace-step-by-step";
}

bool RecorderOptions::is_trace_flag(std::string_view a) {
  return a == "--trace" || a.starts_with("--trace-") || a.starts_with("--trace=");
}

RecorderOptions RecorderOptions::from_env_and_args(const std::map<std::string, std::string>& env,
                                                   std::vector<std::string>& args) {
  RecorderOptions o;
  for (const auto& [var, key] : kEnv) {
    auto it = env.find(var);
    if (it == env.end()) continue;
    if (it->second.empty() && std::string(key) == "trace") continue;  // MINFER_TRACE= : off
    apply(o, key, it->second, std::string(var));
  }

  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!is_trace_flag(a)) {
      rest.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const std::string key = name == "trace" ? "trace" : name.substr(6);  // strip "trace-"
    if (is_trace_switch("--" + name)) {
      apply(o, key, inline_value ? value : "1", "--" + name);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) fail("--", name, " needs a value");
      value = args[++i];
    }
    apply(o, key, value, "--" + name);
  }
  args = std::move(rest);
  return o;
}

}  // namespace minfer::trace
