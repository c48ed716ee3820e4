// minfer-trace: validate, summarize, compare and export recorded traces.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "format/checked_trace.h"
#include "format/trace_keys.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "json_out.h"
#include "format/json_schema.h"
#include "output_file.h"
#include "perfetto_export.h"
#include "step_journal.h"
#include "format/trace_check.h"
#include "trace_diff.h"
#include "format/trace_load.h"
#include "trace_recover.h"
#include "format/trace_schema.h"
#include "trace_summary.h"

using nlohmann::json;
namespace tr = minfer::trace;
namespace kdoc = minfer::trace::keys::document;

namespace {

const char* kUsage =
    "usage: minfer-trace COMMAND ...\n"
    "  validate FILE [--schema SCHEMA.json]   schema + consistency checks (exit 1 when invalid)\n"
    "  summary FILE                           model, steps, tokens, largest |x|, NaN/Inf, time per op\n"
    "  diff A B [--json] [--threshold X] [--metric sqnr_db|cosine|max_abs_diff|rel_err] [-o OUT]\n"
    "                                         compare two runs of the same model and prompt\n"
    "  diff T [...]                           a paired trace (minfer --compare-path): A against its\n"
    "                                         reference, full-tensor metrics and local errors\n"
    "  export-perfetto FILE [-o OUT]          Chrome trace-event JSON (ui.perfetto.dev)\n"
    "  recover FILE                           a killed CUDA run: add the steps its journal\n"
    "                                         (FILE.partial.journal) holds to FILE.partial\n"
    "FILE may be .json or .json.gz; unfinished (.partial) traces are accepted. Before any command:\n"
    "  --max-trace-bytes N[K|M|G]             largest JSON text read (inflated size for .gz; default\n"
    "                                         256M, or MINFER_TRACE_MAX_BYTES)\n"
    "summary, diff and export-perfetto read only traces that validate.\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string base_name(const std::string& p) {
  const size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

tr::ReadOptions g_read;  // --max-trace-bytes, set once in run()

// A killed CUDA run's .partial lacks the steps still in its journal.
void warn_if_journal(const std::string& path) {
  const std::string j = tr::journal_path_for(path);
  if (path.ends_with(".partial") && ::access(j.c_str(), F_OK) == 0)
    std::cerr << path << ": warning: " << j << " may hold steps this file lacks: minfer-trace recover " << path << "\n";
}

// A trace for the readers: version 2 or 3 and valid (they index fields without checking each).
json load_valid(const std::string& path) {
  tr::LoadInfo li;
  json t = tr::load_checked_trace(path, &li, g_read);
  if (li.salvaged) std::cerr << path << ": warning: cut mid-step; read up to its last whole step\n";
  warn_if_journal(path);
  return t;
}

int cmd_validate(std::vector<std::string> args) {
  std::string file, schema_path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--schema" && i + 1 < args.size()) schema_path = args[++i];
    else if (file.empty()) file = args[i];
    else throw UsageError("validate: unexpected argument '" + args[i] + "'");
  }
  if (file.empty()) throw UsageError("validate: missing FILE");
  tr::LoadInfo li;
  const json t = tr::load_trace(file, &li, g_read);
  warn_if_journal(file);
  if (t[kdoc::kVersion] != 2 && t[kdoc::kVersion] != 3)
    minfer::fail(file, ": version ", t[kdoc::kVersion].dump(), " cannot be validated (versions ", tr::validated_versions(), ")");
  std::vector<std::string> errs;
  if (schema_path.empty()) {
    errs = tr::validate_trace(t);
  } else {
    tr::SchemaValidator v(tr::load_json_file(schema_path, g_read));
    errs = v.validate(t, 50);
    if (errs.empty()) errs = tr::check_consistency(t);
  }
  if (!errs.empty()) {
    std::cerr << file << ": INVALID (" << errs.size() << (errs.size() >= 50 ? "+" : "") << " problems)\n";
    for (const auto& e : errs) std::cerr << "  " << e << "\n";
    return 1;
  }
  std::cout << file << ": valid minfer-trace v" << t[kdoc::kVersion].dump() << ", " << t[kdoc::kSteps].size() << " steps, "
            << t[kdoc::kGraphs].size() << " graphs, " << (t[kdoc::kComplete] == true ? "complete" : "UNFINISHED (complete: false)")  // trace-keys: prose
            << (li.salvaged ? ", salvaged from a cut file" : "") << (li.gzip ? ", gzip" : "") << "\n";
  return 0;
}

int cmd_summary(std::vector<std::string> args) {
  if (args.size() != 1) throw UsageError("summary: expected exactly one FILE");
  tr::write_output_file("-", tr::summarize_trace(load_valid(args[0])));
  return 0;
}

std::string f3(const json& v, const char* fmt = "%.3g") {
  if (!v.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v.get<double>());
  return buf;
}

void print_diff(const json& d, std::ostream& out) {
  const json &a = d["a"], &b = d["b"];  // the diff's answer (trace_diff.h), not a trace:
  out << "A: " << a["file"].get<std::string>() << "  (" << a["backend"].get<std::string>() << ", "
            << a["matmul_path"].get<std::string>() << ", " << a["steps"] << " steps)\n"  // trace-keys: the diff's answer
            << "B: " << b["file"].get<std::string>() << "  (" << b["backend"].get<std::string>() << ", "
            << b["matmul_path"].get<std::string>() << ", " << b["steps"] << " steps)\n";  // trace-keys: the diff's answer
  for (const auto& w : d["warnings"]) out << "warning: " << w.get<std::string>() << "\n";
  const bool full = d["metrics_source"] == "full";
  out << "metrics: " << (full ? "full tensors (paired trace, B = the reference)" : "sampled value grids (A = the reference)")
      << "\n";
  if (d["identical"] == true) out << "\nidentical: every compared node and the logits agree exactly\n";
  const json& fd = d["first_divergent"];
  const std::string metric = d["threshold"]["metric"];
  out << "\nfirst divergent node (" << metric << (metric == "sqnr_db" || metric == "cosine" ? " < " : " > ")
            << d["threshold"]["value"].get<double>() << "): ";
  if (fd.is_null()) out << "none\n";
  else
    out << "step " << fd["step"] << ", node " << fd["node"] << " " << fd["name"].get<std::string>() << " ("
              << fd["op"].get<std::string>() << "), " << metric << " = " << f3(fd["value"]) << "\n";
  if (full) {
    const json& wl = d["worst_local"];
    out << "worst local error (the node's own, on A's inputs): ";
    if (wl.is_null()) out << "none\n";
    else
      out << "step " << wl["step"] << ", node " << wl["node"] << " " << wl["name"].get<std::string>() << " ("
          << wl["op"].get<std::string>() << "), local SQNR " << f3(wl["sqnr_db"], "%.1f") << " dB (full "
          << f3(wl["full_sqnr_db"], "%.1f") << " dB)\n";
  }
  out << "token agreement: " << f3(d["token_agreement"], "%.3f") << " over " << d["steps_compared"]
            << " steps\n\nstep  token A          token B          agree  " << (full ? "KL(full) " : "KL(top-k)")
            << "  min SQNR dB  node\n";
  for (const auto& s : d["steps"]) {  // trace-keys: the diff's answer
    double worst = INFINITY;
    std::string worst_name = "-";
    for (const auto& n : s["nodes"])  // trace-keys: the diff's answer
      if (n["sqnr_db"].is_number() && n["sqnr_db"].get<double>() < worst)
        worst = n["sqnr_db"].get<double>(), worst_name = n["name"].get<std::string>();
    auto tok = [](const json& id, const json& text) {
      std::string t = id.is_null() ? "-" : id.dump() + " " + json(text).dump();
      t.resize(16, ' ');
      return t;
    };
    const int index = s["index"].get<int>();  // trace-keys: the diff's answer
    char line[256];
    std::snprintf(line, sizeof line, "%4d  %s %s %-5s  %9s  %11s  %s\n", index,
                  tok(s["token_a"], s["text_a"]).c_str(), tok(s["token_b"], s["text_b"]).c_str(),
                  s["agree"].get<bool>() ? "yes" : "NO", f3(full ? s["kl"] : s["kl_topk"]).c_str(),
                  std::isfinite(worst) ? f3(json(worst), "%.1f").c_str() : "-", worst_name.c_str());
    out << line;
  }
  if (full) {  // B ran inside A's steps: only A's node times exist
    out << "\ntime per op type     A (ms)\n";
    for (const auto& o : d["op_times"]) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-14s %10.3f\n", o["op"].get<std::string>().c_str(),
                    o["us_a"].is_number() ? o["us_a"].get<double>() / 1e3 : 0.0);
      out << line;
    }
    return;
  }
  out << "\ntime per op type     A (ms)      B (ms)   B/A\n";
  for (const auto& o : d["op_times"]) {
    const double ua = o["us_a"].is_number() ? o["us_a"].get<double>() : 0, ub = o["us_b"].is_number() ? o["us_b"].get<double>() : 0;
    char line[160];
    std::snprintf(line, sizeof line, "  %-14s %10.3f  %10.3f  %5.2f\n", o["op"].get<std::string>().c_str(), ua / 1e3,
                  ub / 1e3, ua > 0 ? ub / ua : 0.0);
    out << line;
  }
}

int cmd_diff(std::vector<std::string> args) {
  std::vector<std::string> files;
  bool as_json = false;
  std::string out;
  tr::DiffOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError("diff: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--json") as_json = true;
    else if (a == "--threshold") {
      try {
        o.threshold = minfer::parse_number(value(), "diff: --threshold", -1e12, 1e12);  // any metric's scale
      } catch (const minfer::Error& e) {
        throw UsageError(e.what());
      }
    } else if (a == "--metric") o.metric = value();
    else if (a == "-o") out = value();
    else if (!a.empty() && a[0] == '-') throw UsageError("diff: unknown option '" + a + "'");
    else files.push_back(a);
  }
  if (files.empty() || files.size() > 2) throw UsageError("diff: expected two trace files A B, or one paired trace");
  o.label_a = base_name(files[0]);
  o.label_b = files.size() == 2 ? base_name(files[1]) : o.label_a;
  const json d = files.size() == 2 ? tr::diff(load_valid(files[0]), load_valid(files[1]), o)
                                   : tr::diff_paired(load_valid(files[0]), o);
  if (as_json || !out.empty()) tr::write_output_file(out.empty() ? "-" : out, d.dump(1) + "\n");
  if (!as_json) {
    std::ostringstream text;
    print_diff(d, text);
    tr::write_output_file("-", text.str());
  }
  return 0;
}

int cmd_export(std::vector<std::string> args) {
  std::string file, out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o") {
      if (i + 1 >= args.size()) throw UsageError("export-perfetto: -o needs a value");
      out = args[++i];
    } else if (file.empty()) file = args[i];
    else throw UsageError("export-perfetto: unexpected argument '" + args[i] + "'");
  }
  if (file.empty()) throw UsageError("export-perfetto: missing FILE");
  if (out.empty()) {
    out = file;
    for (const char* ext : {".partial", ".gz", ".json"})
      if (out.size() > std::strlen(ext) && out.compare(out.size() - std::strlen(ext), std::strlen(ext), ext) == 0)
        out.resize(out.size() - std::strlen(ext));
    out += ".perfetto.json";
  }
  const json p = tr::to_perfetto(load_valid(file));
  tr::write_output_file(out, p.dump() + "\n");
  if (out != "-") std::cerr << "wrote " << out << " (" << p["traceEvents"].size() << " events; open in ui.perfetto.dev)\n";
  return 0;
}

int cmd_recover(std::vector<std::string> args) {
  if (args.size() != 1) throw UsageError("recover: expected exactly one FILE");
  const tr::RecoverResult r = tr::recover_trace(args[0]);
  std::cout << r.partial << ": " << r.steps_in_file << " whole steps in the file, " << r.steps_recovered
            << " recovered from its journal: " << r.steps_in_file + r.steps_recovered
            << " steps (still UNFINISHED: the run did not end)\n";
  return 0;
}

int run(std::vector<std::string> args) {
  if (args.empty()) throw UsageError("missing COMMAND");
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    tr::write_output_file("-", kUsage);
    return 0;
  }
  g_read.max_bytes = tr::default_max_trace_bytes(minfer::process_environment());  // the one read of it
  while (!args.empty() && args[0] == "--max-trace-bytes") {
    if (args.size() < 2) throw UsageError("--max-trace-bytes needs a value");
    g_read.max_bytes = tr::parse_byte_size(args[1], "--max-trace-bytes");
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) throw UsageError("missing COMMAND");
  const std::string cmd = args[0];
  args.erase(args.begin());
  int rc = 2;
  if (cmd == "validate") rc = cmd_validate(args);
  else if (cmd == "summary") rc = cmd_summary(args);
  else if (cmd == "diff") rc = cmd_diff(args);
  else if (cmd == "export-perfetto") rc = cmd_export(args);
  else if (cmd == "recover") rc = cmd_recover(args);
  else throw UsageError("unknown command '" + cmd + "'");
  tr::finish_stdout();  // a lost write to stdout is a failure, whatever the command said
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "minfer-trace: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const minfer::Error& e) {
    std::cerr << "minfer-trace: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    // Not reachable from bad input (readers get validated traces); a bug if it is.
    std::cerr << "minfer-trace: internal error (please report): " << e.what() << "\n";
    return 3;
  }
}
