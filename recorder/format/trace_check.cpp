#include "format/trace_check.h"

#include <cmath>
#include <map>

#include "format/json_schema.h"
#include "format/trace_schema.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

// Tolerance for values written with 6 significant digits.
constexpr double kRel = 2e-5;

bool num(const json& v) { return v.is_number(); }

// Counts are at most 2^53 (schema), so sums of a few fit; products of two may not.
int64_t times(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
int64_t plus(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

struct Checker {
  std::vector<std::string>& errs;
  size_t max_errors;

  bool full() const { return errs.size() >= max_errors; }
  void err(const std::string& at, const std::string& what) {
    if (!full()) errs.push_back(at + ": " + what);
  }

  void graph(const json& g, const std::string& at) {
    const auto& nodes = g["nodes"];
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& n = nodes[i];
      const std::string here = at + "/nodes/" + std::to_string(i);
      if (n["id"] != i) err(here + "/id", "node id " + n["id"].dump() + " differs from its index " + std::to_string(i));
      for (const auto& s : n["src"])
        if (s.get<size_t>() >= nodes.size())
          err(here + "/src", "source node " + s.dump() + " does not exist");
        else if (s.get<size_t>() >= i && n["fused_into"] == -1)
          err(here + "/src", "source node " + s.dump() + " runs after this node (" + std::to_string(i) + ")");
      const int64_t into = n["fused_into"].get<int64_t>();
      if (into >= static_cast<int64_t>(nodes.size())) err(here + "/fused_into", "node " + std::to_string(into) + " does not exist");
      if (into >= 0 && n["has_output"].get<bool>()) err(here + "/has_output", "a fused-away node cannot have an output");
    }
  }

  void stats(const json& s, const std::string& at) {
    const int64_t count = s["count"], nan = s["nan"], inf = s["inf"];
    if (nan + inf > count) err(at, "nan + inf (" + std::to_string(nan + inf) + ") exceeds count " + std::to_string(count));
    const bool finite = count - nan - inf > 0;
    for (const char* k : {"min", "max", "mean", "absmean", "std"})
      if (num(s[k]) != finite)
        err(at + "/" + k, finite ? "null although the tensor has finite values" : "a number although no value is finite");
    if (!finite || !num(s["min"]) || !num(s["max"]) || !num(s["mean"])) return;
    const double lo = s["min"], hi = s["max"], mean = s["mean"];
    const double tol = kRel * std::max({std::fabs(lo), std::fabs(hi), 1e-30});
    if (lo > hi + tol) err(at, "min > max");
    if (mean < lo - tol || mean > hi + tol) err(at + "/mean", "outside [min, max]");
    if (num(s["absmean"]) && s["absmean"].get<double>() < 0) err(at + "/absmean", "negative");
    if (num(s["std"]) && s["std"].get<double>() < 0) err(at + "/std", "negative");
  }

  void grid(const json& g, const json& node, const std::string& at) {
    const int64_t rows = g["rows"], cols = g["cols"], rs = g["row_stride"], cs = g["col_stride"];
    const int64_t cells = times(rows, cols);
    if (static_cast<int64_t>(g["values"].size()) != cells)
      err(at + "/values", "has " + std::to_string(g["values"].size()) + " values, rows*cols = " +
                              std::to_string(cells));
    if (g["shape"] != node["shape"])
      err(at + "/shape", g["shape"].dump() + " differs from the graph node's shape " + node["shape"].dump());
    const int64_t R = g["shape"][0], C = g["shape"][1];
    if (rows > 0 && times(rows - 1, rs) >= R) err(at, "grid rows x row_stride run past the tensor's " + std::to_string(R) + " rows");
    if (cols > 0 && times(cols - 1, cs) >= C) err(at, "grid cols x col_stride run past the tensor's " + std::to_string(C) + " columns");
  }

  void hist(const json& h, const json& s, const std::string& at) {
    int64_t total = 0;
    for (const auto& c : h["counts"]) total = plus(total, c.get<int64_t>());
    const int64_t count = s["count"], nan = s["nan"], inf = s["inf"];
    if (total != count - nan - inf)
      err(at + "/counts", "sum to " + std::to_string(total) + ", expected the finite count " +
                              std::to_string(count - nan - inf));
    if (h["underflow"].get<int64_t>() + h["overflow"].get<int64_t>() != inf)
      err(at, "underflow + overflow differ from stats.inf (" + std::to_string(inf) + ")");
    if (num(h["lo"]) && num(h["hi"]) && h["lo"].get<double>() > h["hi"].get<double>()) err(at, "lo > hi");
  }

  // A top-k list: descending probabilities, ids in the vocabulary, at most options.top_k.
  void top_list(const json& top, const json& l, const json& meta, const std::string& at) {
    double sum = 0;
    for (size_t i = 0; i < top.size(); ++i) {
      const double p = top[i]["p"];
      sum += p;
      if (i > 0 && p > top[i - 1]["p"].get<double>() * (1 + kRel) + 1e-12)
        err(at + "/top/" + std::to_string(i), "probabilities are not in descending order");
      if (top[i]["id"].get<int64_t>() >= l["n_vocab"].get<int64_t>())
        err(at + "/top/" + std::to_string(i) + "/id", "token id outside the vocabulary");
    }
    if (sum > 1 + 1e-3) err(at + "/top", "probabilities sum to " + std::to_string(sum) + " > 1");
    if (meta.contains("options") && top.size() > meta["options"]["top_k"].get<size_t>())
      err(at + "/top", "has more entries than options.top_k");
  }

  void logits(const json& l, const json& meta, const std::string& at) {
    const auto& top = l["top"];
    top_list(top, l, meta, at);
    if (num(l["entropy"])) {
      const double h = l["entropy"], hmax = std::log(l["n_vocab"].get<double>());
      if (h < -1e-6 || h > hmax * (1 + kRel) + 1e-6)
        err(at + "/entropy", "outside [0, log(n_vocab)]");
    }
    if (l.contains("sampled")) sampled(l["sampled"], l, meta, at + "/sampled");
    const int64_t chosen = l["chosen"], rank = l["chosen_rank"];
    if ((chosen < 0) != (rank < 0)) err(at + "/chosen_rank", "must be -1 exactly when chosen is -1");
    if (chosen < 0) return;
    int64_t found = -1;
    for (size_t i = 0; i < top.size(); ++i)
      if (top[i]["id"] == chosen) found = static_cast<int64_t>(i);
    if (found >= 0 && found != rank)
      err(at + "/chosen_rank", std::to_string(rank) + " but the chosen token is entry " + std::to_string(found) + " of top");
    if (found < 0 && rank < static_cast<int64_t>(top.size()))
      err(at + "/chosen_rank", std::to_string(rank) + " but the chosen token is not in that place of top");
    if (found >= 0 && num(l["chosen_p"])) {
      const double p = l["chosen_p"], q = top[found]["p"];
      if (std::fabs(p - q) > kRel * std::max(p, q) + 1e-12) err(at + "/chosen_p", "differs from its top entry's p");
    }
  }

  // The sampler's distribution: a top-k like the raw one (descending, in the vocabulary).
  void sampled(const json& sm, const json& l, const json& meta, const std::string& at) {
    top_list(sm["top"], l, meta, at);
    if (l["chosen"].get<int64_t>() < 0 && !sm["chosen_p"].is_null()) err(at + "/chosen_p", "a probability although nothing was chosen");
  }

  // v3 additions of a node record with stats: the reference's summary, the comparison, the
  // outliers and the activation's block scales, against the node's shape and the run's meta.
  void node_extras(const json& r, const json& node, const json& meta, const std::string& here) {
    const bool paired = meta.contains("compare");
    const int64_t R = node["shape"][0], C = node["shape"][1], elems = times(R, C);
    for (const char* k : {"ref", "cmp"})
      if (r.contains(k) && !paired) err(here + "/" + k, "present but meta.compare is absent (not a paired trace)");
    if (r.contains("ref")) {
      const json& ref = r["ref"];
      if (ref["stats"]["count"] != elems)
        err(here + "/ref/stats/count", ref["stats"]["count"].dump() + " but the node's shape holds " + std::to_string(elems));
      stats(ref["stats"], here + "/ref/stats");
      if (ref.contains("grid")) grid(ref["grid"], node, here + "/ref/grid");
      if (ref.contains("hist")) hist(ref["hist"], ref["stats"], here + "/ref/hist");
    }
    if (r.contains("cmp")) {
      const json& c = r["cmp"];
      if (c["n_beyond"].get<int64_t>() > elems) err(here + "/cmp/n_beyond", "exceeds the element count " + std::to_string(elems));
      if (c["max_abs_at"].is_array() && (c["max_abs_at"][0].get<int64_t>() >= R || c["max_abs_at"][1].get<int64_t>() >= C))
        err(here + "/cmp/max_abs_at", c["max_abs_at"].dump() + " is outside the shape " + node["shape"].dump());
      if (num(c["cosine"]) && std::fabs(c["cosine"].get<double>()) > 1 + 1e-5) err(here + "/cmp/cosine", "outside [-1, 1]");
    }
    if (r.contains("outliers")) {
      const json& o = r["outliers"];
      if (meta.contains("options") && meta["options"].contains("outliers") &&
          o.size() > meta["options"]["outliers"].get<size_t>())
        err(here + "/outliers", "has more entries than options.outliers");
      for (size_t i = 0; i < o.size(); ++i) {
        const std::string at = here + "/outliers/" + std::to_string(i);
        if (o[i]["row"].get<int64_t>() >= R || o[i]["col"].get<int64_t>() >= C) err(at, "outside the shape " + node["shape"].dump());
        if (o[i].contains("ref_value") != paired) err(at, paired ? "missing ref_value in a paired trace" : "ref_value without meta.compare");
        const auto mag = [](const json& v) { return v.is_number() ? std::fabs(v.get<double>()) : INFINITY; };
        if (i > 0 && mag(o[i]["value"]) > mag(o[i - 1]["value"]) * (1 + kRel)) err(at, "not in descending order of |value|");
      }
    }
    if (r.contains("act_scales")) {
      const json& a = r["act_scales"];
      if (node["op"] != "matmul" && node["op"] != "logits") err(here + "/act_scales", "on a " + node["op"].get<std::string>() + " node (matmul and logits only)");
      const double lo = a["min"], hi = a["max"], mean = a["mean"], tol = kRel * std::max(hi, 1e-30);
      if (lo > hi + tol || mean < lo - tol || mean > hi + tol) err(here + "/act_scales", "not min <= mean <= max");
    }
  }

  // A paired step: the reference's logits and the step comparison agree with both logits.
  void step_compare(const json& s, const json& meta, const std::string& at) {
    const bool paired = meta.contains("compare");
    for (const char* k : {"ref_logits", "compare"})
      if (s.contains(k) && !paired) err(at + "/" + k, "present but meta.compare is absent (not a paired trace)");
    if (!s.contains("compare") || s["logits"].is_null() || !s.contains("ref_logits") || s["ref_logits"].is_null()) return;
    const json &c = s["compare"], &la = s["logits"], &lb = s["ref_logits"];
    if (!la["top"].empty() && c["top1_a"] != la["top"][0]["id"]) err(at + "/compare/top1_a", "differs from logits.top[0].id");
    if (!lb["top"].empty() && c["top1_b"] != lb["top"][0]["id"]) err(at + "/compare/top1_b", "differs from ref_logits.top[0].id");
    if (c["chosen_differs"].get<bool>() != (la["chosen"] != lb["chosen"]))
      err(at + "/compare/chosen_differs", "disagrees with logits.chosen and ref_logits.chosen");
  }

  void step(const json& s, size_t i, const std::map<std::string, const json*>& graphs,
            const json& meta) {
    const std::string at = "/steps/" + std::to_string(i);
    if (s["index"] != i) err(at + "/index", "is " + s["index"].dump() + ", expected " + std::to_string(i) + " (steps are in order from 0)");
    if ((i == 0) != (s["phase"] == "prefill")) err(at + "/phase", "step 0 is the prefill and only step 0");
    auto g = graphs.find(s["graph"].get<std::string>());
    if (g == graphs.end()) {
      err(at + "/graph", "graph '" + s["graph"].get<std::string>() + "' is not in graphs[]");
      return;
    }
    const json& gj = *g->second;
    if (gj["phase"] != s["phase"]) err(at + "/graph", "graph phase differs from the step's phase");
    if (s["tokens"].size() != gj["n_tokens"].get<size_t>())
      err(at + "/tokens", "has " + std::to_string(s["tokens"].size()) + " tokens, the graph takes " + gj["n_tokens"].dump());
    const auto& nodes = gj["nodes"];
    int64_t prev = -1;
    for (size_t k = 0; k < s["nodes"].size() && !full(); ++k) {
      const json& r = s["nodes"][k];
      const std::string here = at + "/nodes/" + std::to_string(k);
      const int64_t id = r["id"];
      if (id >= static_cast<int64_t>(nodes.size())) {
        err(here + "/id", "node " + std::to_string(id) + " is not in graph '" + gj["id"].get<std::string>() + "'");
        continue;
      }
      if (id <= prev) err(here + "/id", "node records are not in execution order");
      prev = id;
      const json& node = nodes[static_cast<size_t>(id)];
      if (r.contains("no_output")) {
        if (node["has_output"].get<bool>()) err(here, "marked no_output but the graph node has an output");
        continue;
      }
      if (!node["has_output"].get<bool>()) err(here, "has stats but the graph node has no output");
      const int64_t elems = times(node["shape"][0].get<int64_t>(), node["shape"][1].get<int64_t>());
      if (r["stats"]["count"] != elems)
        err(here + "/stats/count", r["stats"]["count"].dump() + " but the node's shape holds " + std::to_string(elems));
      stats(r["stats"], here + "/stats");
      if (r.contains("grid")) grid(r["grid"], node, here + "/grid");
      if (r.contains("hist")) hist(r["hist"], r["stats"], here + "/hist");
      node_extras(r, node, meta, here);
    }
    if (s.contains("nodes_skipped") && s["nodes_skipped"] == true && !s["nodes"].empty())
      err(at + "/nodes", "nodes_skipped but node records present");
    if (!s["logits"].is_null()) logits(s["logits"], meta, at + "/logits");
    if (s.contains("ref_logits") && !s["ref_logits"].is_null()) logits(s["ref_logits"], meta, at + "/ref_logits");
    step_compare(s, meta, at);
    for (size_t k = 0; k < s["kernels"].size(); ++k)
      if (s["kernels"][k]["node"].get<int64_t>() >= static_cast<int64_t>(nodes.size()))
        err(at + "/kernels/" + std::to_string(k) + "/node", "node is not in the step's graph");
  }
};

}  // namespace

std::vector<std::string> check_consistency(const json& t, size_t max_errors, size_t first_step) {
  std::vector<std::string> errs;
  Checker c{errs, max_errors};
  std::map<std::string, const json*> graphs;
  for (size_t i = 0; i < t["graphs"].size(); ++i) {
    const json& g = t["graphs"][i];
    if (!graphs.emplace(g["id"].get<std::string>(), &g).second)
      c.err("/graphs/" + std::to_string(i) + "/id", "graph id '" + g["id"].get<std::string>() + "' appears twice");
    c.graph(g, "/graphs/" + std::to_string(i));
  }
  for (size_t i = 0; i < t["steps"].size() && !c.full(); ++i) c.step(t["steps"][i], first_step + i, graphs, t["meta"]);
  if (t["complete"] == true && !t.contains("timings")) c.err("/timings", "a complete trace has timings");
  return errs;
}

std::vector<std::string> validate_trace(const json& t, size_t max_errors, size_t first_step,
                                        const CancelFlag* cancel) {
  static const SchemaValidator v2(trace_schema(2)), v3(trace_schema(3));
  const json* version = t.is_object() && t.contains("version") ? &t["version"] : nullptr;
  if (!version || !version->is_number_integer() || (*version != 2 && *version != 3))
    return {"/version: " + (version ? version->dump() : std::string("missing")) + " is not a version validated here (" +
            validated_versions() + ")"};
  auto errs = (*version == 2 ? v2 : v3).validate(t, max_errors, cancel);
  if (!errs.empty()) return errs;
  stop_if_cancelled(cancel);
  return check_consistency(t, max_errors, first_step);
}

}  // namespace minfer::trace
