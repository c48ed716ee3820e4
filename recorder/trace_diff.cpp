#include "trace_diff.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "format/trace_keys.h"
#include "json_out.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

json r6(double v) { return std::isfinite(v) ? json(round6(v)) : json(nullptr); }

std::string str_at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return "";
    p = &(*p)[k];
  }
  return p->is_string() ? p->get<std::string>() : "";
}

double num_or_nan(const json& v) { return v.is_number() ? v.get<double>() : std::nan(""); }

struct GridCompare {
  bool ok = false;  // both grids present with the same layout
  double max_abs = 0, cosine = 0, sqnr_db = 0;
  int64_t nonfinite_mismatch = 0;
};

GridCompare compare_grids(const json& ra, const json& rb) {
  GridCompare c;
  if (!ra.contains("grid") || !rb.contains("grid")) return c;
  const json &ga = ra["grid"], &gb = rb["grid"];
  for (const char* k : {"rows", "cols", "row_stride", "col_stride"})
    if (ga[k] != gb[k]) return c;
  const auto &va = ga["values"], &vb = gb["values"];
  if (va.size() != vb.size()) return c;
  c.ok = true;
  double sa = 0, sb = 0, se = 0, dot = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const bool fa = va[i].is_number(), fb = vb[i].is_number();
    if (!fa || !fb) {
      c.nonfinite_mismatch += fa != fb;
      continue;
    }
    const double x = va[i].get<double>(), y = vb[i].get<double>(), d = x - y;
    sa += x * x;
    sb += y * y;
    se += d * d;
    dot += x * y;
    c.max_abs = std::max(c.max_abs, std::fabs(d));
  }
  c.cosine = sa > 0 && sb > 0 ? dot / std::sqrt(sa * sb) : (sa == sb ? 1.0 : 0.0);
  if (c.nonfinite_mismatch > 0) c.sqnr_db = -kSqnrCapDb;
  else if (se == 0) c.sqnr_db = kSqnrCapDb;
  else if (sa == 0) c.sqnr_db = -kSqnrCapDb;
  else c.sqnr_db = std::clamp(10 * std::log10(sa / se), -kSqnrCapDb, kSqnrCapDb);
  return c;
}

double rel_err(const json& a, const json& b) {
  if (!a.is_number() || !b.is_number()) return std::nan("");
  const double x = a.get<double>(), y = b.get<double>(), m = std::max(std::fabs(x), std::fabs(y));
  return m == 0 ? 0.0 : std::fabs(x - y) / m;
}

// KL(A||B) over the union of both top-k lists plus one "rest" bucket. A token listed on one
// side only gets, on the other, that side's smallest listed p capped by its unlisted mass.
double kl_topk(const json& la, const json& lb) {
  std::map<int64_t, double> pa, pb;
  for (const auto& e : la["top"]) pa[e["id"].get<int64_t>()] = e["p"].get<double>();
  for (const auto& e : lb["top"]) pb[e["id"].get<int64_t>()] = e["p"].get<double>();
  std::set<int64_t> ids;
  for (auto& [k, v] : pa) ids.insert(k);
  for (auto& [k, v] : pb) ids.insert(k);
  const auto fill = [&](std::map<int64_t, double>& p) {
    double listed = 0, smallest = 1;
    for (auto& [k, v] : p) listed += v, smallest = std::min(smallest, v);
    double rest = std::max(0.0, 1 - listed);
    std::vector<double> out;
    for (int64_t id : ids) {
      auto it = p.find(id);
      double v = it != p.end() ? it->second : std::min(smallest, rest);
      if (it == p.end()) rest -= v;
      out.push_back(v);
    }
    out.push_back(std::max(rest, 0.0));
    double z = 0;
    for (double& v : out) z += (v = std::max(v, 1e-10));
    for (double& v : out) v /= z;
    return out;
  };
  const auto qa = fill(pa), qb = fill(pb);
  double kl = 0;
  for (size_t i = 0; i < qa.size(); ++i) kl += qa[i] * std::log(qa[i] / qb[i]);
  return std::max(kl, 0.0);
}

void check_same_run(const json& a, const json& b, const DiffOptions& o) {
  const std::string sa = str_at(a, {kdoc::kMeta, kmeta::kModel, kmodel::kSha256}), sb = str_at(b, {kdoc::kMeta, kmeta::kModel, kmodel::kSha256});
  if (sa != sb)
    fail("cannot compare traces of different models: ", o.label_a, " is ", str_at(a, {kdoc::kMeta, kmeta::kModel, kmodel::kFile}),
         " (sha256 ", sa.substr(0, 12), "), ", o.label_b, " is ", str_at(b, {kdoc::kMeta, kmeta::kModel, kmodel::kFile}),
         " (sha256 ", sb.substr(0, 12), ")");
  std::map<std::string, const json*> gb;
  for (const auto& g : b[kdoc::kGraphs]) gb[g[kgraph::kId].get<std::string>()] = &g;
  for (const auto& g : a[kdoc::kGraphs]) {
    const std::string id = g[kgraph::kId];
    auto it = gb.find(id);
    if (it == gb.end()) {
      bool used = false;
      for (const auto& s : b[kdoc::kSteps]) {
        stop_if_cancelled(o.cancel);
        used = used || s[kstep::kGraph] == id;
      }
      if (!used) continue;  // b never got that far
      fail("cannot compare: graph '", id, "' of ", o.label_a, " is missing from ", o.label_b);
    }
    const auto &na = g[kgraph::kNodes], &nb = (*it->second)[kgraph::kNodes];
    if (na.size() != nb.size())
      fail("cannot compare different graphs: '", id, "' has ", na.size(), " nodes in ", o.label_a, " and ",
           nb.size(), " in ", o.label_b);
    for (size_t i = 0; i < na.size(); ++i) {
      stop_if_cancelled(o.cancel);
      if (na[i]["name"] != nb[i]["name"] || na[i]["op"] != nb[i]["op"])
        fail("cannot compare different graphs: node ", i, " of '", id, "' is ", na[i]["name"].get<std::string>(),
             " (", na[i]["op"].get<std::string>(), ") in ", o.label_a, " but ", nb[i]["name"].get<std::string>(),
             " (", nb[i]["op"].get<std::string>(), ") in ", o.label_b);
    }
  }
  if (!a[kdoc::kSteps].empty() && !b[kdoc::kSteps].empty()) {
    std::vector<int64_t> ta, tb;
    for (const auto& t : a[kdoc::kSteps][0][kstep::kTokens]) ta.push_back(t[ktok::kId]);
    for (const auto& t : b[kdoc::kSteps][0][kstep::kTokens]) tb.push_back(t[ktok::kId]);
    if (ta != tb)
      fail("cannot compare runs of different prompts: the prefill tokens of ", o.label_a, " and ", o.label_b, " differ");
  }
}

json side_info(const json& t, const std::string& label) {
  return {{"file", label},
          {"matmul_path", str_at(t, {kdoc::kMeta, kmeta::kMatmulPath})},
          {"backend", str_at(t, {kdoc::kMeta, kmeta::kBackend})},
          {"device", str_at(t, {kdoc::kMeta, kmeta::kDevice})},
          {"complete", t.value(kdoc::kComplete, false)},
          {"steps", t[kdoc::kSteps].size()}};
}

void check_metric(const DiffOptions& o) {
  static const std::set<std::string> metrics = {"sqnr_db", "cosine", "max_abs_diff", "rel_err"};
  if (!metrics.count(o.metric))
    fail("diff: unknown metric '", o.metric, "' (use sqnr_db, cosine, max_abs_diff or rel_err)");
}

void check_document(const json& t, const std::string& label) {
  if (!t.is_object() || !t.contains(kdoc::kGraphs) || !t.contains(kdoc::kSteps) || (t[kdoc::kVersion] != 2 && t[kdoc::kVersion] != 3))
    fail("diff: ", label, " is not a minfer-trace version 2 or 3 document");
}

// The fields every comparison output starts with.
json output_head(const json& a, const DiffOptions& o, const char* metrics_source) {
  json out;
  out["model"] = {{"file", str_at(a, {kdoc::kMeta, kmeta::kModel, kmodel::kFile})}, {"sha256", str_at(a, {kdoc::kMeta, kmeta::kModel, kmodel::kSha256})}};
  out["threshold"] = {{"metric", o.metric}, {"value", o.threshold}};
  out["metrics_source"] = metrics_source;
  out["first_divergent"] = nullptr;
  out["worst_local"] = nullptr;
  out["steps"] = json::array();
  return out;
}

// Token fields of a step from the two Logits objects (either may be null). Counts agreement.
void step_tokens(json& st, const json& la_j, const json& lb_j, size_t& agree, size_t& with_tokens) {
  const bool la = la_j.is_object(), lb = lb_j.is_object();
  st["token_a"] = la ? la_j["chosen"] : json(nullptr);
  st["token_b"] = lb ? lb_j["chosen"] : json(nullptr);
  st["text_a"] = la ? la_j["chosen_text"] : json("");
  st["text_b"] = lb ? lb_j["chosen_text"] : json("");
  st["agree"] = la && lb && st["token_a"] == st["token_b"];
  if (la && lb) {
    ++with_tokens;
    agree += st["agree"].get<bool>();
  }
  st["kl_topk"] = la && lb ? r6(kl_topk(la_j, lb_j)) : json(nullptr);
  st["entropy_a"] = la ? la_j["entropy"] : json(nullptr);
  st["entropy_b"] = lb ? lb_j["entropy"] : json(nullptr);
}

// The relative error of each statistic; returns the largest finite one.
double stats_rel_err(const json& a, const json& b, json& out) {
  double worst = 0;
  for (const char* k : {"min", "max", "mean", "absmean", "std"}) {
    const double e = rel_err(a[k], b[k]);
    out[k] = r6(e);
    if (std::isfinite(e)) worst = std::max(worst, e);
  }
  return worst;
}

int64_t nonfinite(const json& stats) { return stats["nan"].get<int64_t>() + stats["inf"].get<int64_t>(); }

// Whether a node's metric value passes the threshold (see DiffOptions::metric).
bool diverges(const DiffOptions& o, double value) {
  const bool below = o.metric == "sqnr_db" || o.metric == "cosine";
  return std::isfinite(value) && (below ? value < o.threshold : value > o.threshold);
}

void finish_output(json& out, size_t n, size_t agree, size_t with_tokens, bool identical,
                   const std::map<std::string, std::array<double, 3>>& op_times, bool times_b, json warnings) {
  out["steps_compared"] = n;
  out["token_agreement"] = with_tokens ? r6(static_cast<double>(agree) / with_tokens) : json(nullptr);
  // A self-comparison: nothing diverged, so nothing is named (not even the closest node).
  out["identical"] = identical;
  if (identical) out["first_divergent"] = nullptr;
  json ops = json::array();
  for (auto& [op, t] : op_times)
    ops.push_back({{"op", op}, {"us_a", r6(t[0])}, {"us_b", times_b ? r6(t[1]) : json(nullptr)},
                   {"count", static_cast<int64_t>(t[2])}});
  std::sort(ops.begin(), ops.end(), [](const json& x, const json& y) {
    return num_or_nan(x["us_a"]) > num_or_nan(y["us_a"]);
  });
  out["op_times"] = std::move(ops);
  out["warnings"] = std::move(warnings);
}

}  // namespace

json diff(const json& a, const json& b, const DiffOptions& o) {
  check_metric(o);
  check_document(a, o.label_a);
  check_document(b, o.label_b);
  check_same_run(a, b, o);

  std::map<std::string, const json*> graphs;
  for (const auto& g : a[kdoc::kGraphs]) graphs[g[kgraph::kId].get<std::string>()] = &g;

  json out = output_head(a, o, "grid");
  json steps_out = json::array();
  out["a"] = side_info(a, o.label_a);
  out["b"] = side_info(b, o.label_b);
  json warnings = json::array();
  if (!a.value(kdoc::kComplete, false)) warnings.push_back(o.label_a + " is an unfinished trace");
  if (!b.value(kdoc::kComplete, false)) warnings.push_back(o.label_b + " is an unfinished trace");
  if (a[kdoc::kSteps].size() != b[kdoc::kSteps].size())
    warnings.push_back("step counts differ (" + std::to_string(a[kdoc::kSteps].size()) + " vs " +
                       std::to_string(b[kdoc::kSteps].size()) + "): the first " +
                       std::to_string(std::min(a[kdoc::kSteps].size(), b[kdoc::kSteps].size())) + " are compared");

  std::map<std::string, std::array<double, 3>> op_times;  // op -> us_a, us_b, count
  size_t agree = 0, with_tokens = 0, no_grid = 0;
  bool inputs_agree = true;
  const size_t n = std::min(a[kdoc::kSteps].size(), b[kdoc::kSteps].size());
  // Identical: same step count, and every step's tokens, logits and compared nodes equal at the
  // recorded precision.
  bool identical = n > 0 && a[kdoc::kSteps].size() == b[kdoc::kSteps].size();
  for (size_t si = 0; si < n; ++si) {
    stop_if_cancelled(o.cancel);
    const json &sa = a[kdoc::kSteps][si], &sb = b[kdoc::kSteps][si];
    const json& g = *graphs.at(sa[kstep::kGraph].get<std::string>());
    json st;
    st["index"] = si;
    st["phase"] = sa[kstep::kPhase];
    step_tokens(st, sa[kstep::kLogits], sb[kstep::kLogits], agree, with_tokens);
    // Once one step's input tokens differ, every later step differs too (its KV cache holds the
    // other tokens), even where the tokens happen to match again.
    inputs_agree = inputs_agree && sa[kstep::kTokens] == sb[kstep::kTokens];
    st["inputs_agree"] = inputs_agree;
    identical = identical && inputs_agree && sa[kstep::kLogits] == sb[kstep::kLogits];
    st["time_ms_a"] = sa[kstep::kTimeMs];
    st["time_ms_b"] = sb[kstep::kTimeMs];

    std::map<int64_t, const json*> rb;
    for (const auto& r : sb[kstep::kNodes]) rb[r[knode::kId].get<int64_t>()] = &r;
    json nodes = json::array();
    for (const auto& ra : sa[kstep::kNodes]) {
      stop_if_cancelled(o.cancel);  // a node's grids can hold thousands of values each
      const int64_t id = ra[knode::kId];
      auto it = rb.find(id);
      if (it == rb.end()) continue;
      const json& rbj = *it->second;
      const json& node = g[kgraph::kNodes][static_cast<size_t>(id)];
      const std::string op = node["op"];
      auto& ot = op_times[op];
      ot[0] += ra.value("time_us", 0.0);
      ot[1] += rbj.value("time_us", 0.0);
      ot[2] += 1;
      if (!ra.contains("stats") || !rbj.contains("stats")) continue;
      json nr;
      nr["id"] = id;
      nr["name"] = node["name"];
      nr["op"] = op;
      json re;
      const double worst = stats_rel_err(ra["stats"], rbj["stats"], re);
      nr["rel_err"] = re;
      nr["nonfinite_a"] = nonfinite(ra["stats"]);
      nr["nonfinite_b"] = nonfinite(rbj["stats"]);
      const GridCompare gc = compare_grids(ra, rbj);
      nr["max_abs_diff"] = gc.ok ? r6(gc.max_abs) : json(nullptr);
      nr["cosine"] = gc.ok ? r6(gc.cosine) : json(nullptr);
      nr["sqnr_db"] = gc.ok ? r6(gc.sqnr_db) : json(nullptr);
      if (!gc.ok) ++no_grid;
      nr["time_us_a"] = ra.value("time_us", json(nullptr));
      nr["time_us_b"] = rbj.value("time_us", json(nullptr));
      identical = identical && nr["nonfinite_a"] == nr["nonfinite_b"] && worst == 0 &&
                  (!gc.ok || (gc.max_abs == 0 && gc.nonfinite_mismatch == 0));

      double value = std::nan("");
      if (o.metric == "rel_err") value = worst;
      else if (gc.ok) value = o.metric == "sqnr_db" ? gc.sqnr_db : o.metric == "cosine" ? gc.cosine : gc.max_abs;
      // Never blamed on a node whose step saw other inputs: that is not the node's error.
      if (diverges(o, value) && inputs_agree && out["first_divergent"].is_null())
        out["first_divergent"] = {{"step", si}, {"node", id}, {"name", node["name"]}, {"op", op},
                                  {"value", r6(value)}, {"sqnr_db", nr["sqnr_db"]}};
      nodes.push_back(std::move(nr));
    }
    st["nodes"] = std::move(nodes);
    steps_out.push_back(std::move(st));
  }
  out["steps"] = std::move(steps_out);
  if (no_grid > 0 && o.metric != "rel_err")
    warnings.push_back(std::to_string(no_grid) + " node records have no comparable value grids (stats-only "
                       "trace or different grid options): they cannot diverge by " + o.metric);
  finish_output(out, n, agree, with_tokens, identical, op_times, true, std::move(warnings));
  return out;
}

json diff_paired(const json& t, const DiffOptions& o) {
  check_metric(o);
  check_document(t, o.label_a);
  if (t[kdoc::kVersion] != 3 || !t[kdoc::kMeta].contains(kmeta::kCompare))  // the v3 schema checks meta.compare's shape
    fail("diff: ", o.label_a, " is not a paired trace (no meta.compare, recorded without --compare-path): "
         "give two traces A B");
  const json& cm = t[kdoc::kMeta][kmeta::kCompare];
  std::map<std::string, const json*> graphs;
  for (const auto& g : t[kdoc::kGraphs]) graphs[g[kgraph::kId].get<std::string>()] = &g;

  json out = output_head(t, o, "full");
  json steps_out = json::array();
  out["a"] = side_info(t, o.label_a);
  out["b"] = side_info(t, o.label_a + " (reference)");
  out["b"]["matmul_path"] = cm[keys::compare_meta::kPath];
  out["b"]["backend"] = cm[keys::compare_meta::kBackend];
  json warnings = json::array();
  if (!t.value(kdoc::kComplete, false)) warnings.push_back(o.label_a + " is an unfinished trace");

  std::map<std::string, std::array<double, 3>> op_times;
  size_t agree = 0, with_tokens = 0, no_cmp = 0;
  bool identical = !t[kdoc::kSteps].empty();
  double worst_local = INFINITY;
  const size_t n = t[kdoc::kSteps].size();
  for (size_t si = 0; si < n; ++si) {
    stop_if_cancelled(o.cancel);
    const json& s = t[kdoc::kSteps][si];
    const json& g = *graphs.at(s[kstep::kGraph].get<std::string>());
    const json ref_logits = s.value(kstep::kRefLogits, json(nullptr));
    json st;
    st["index"] = si;
    st["phase"] = s[kstep::kPhase];
    step_tokens(st, s[kstep::kLogits], ref_logits, agree, with_tokens);
    st["inputs_agree"] = true;  // lockstep: B was fed the tokens A was fed
    st["kl"] = s.contains(kstep::kCompare) ? s[kstep::kCompare]["kl"] : json(nullptr);
    identical = identical && st["kl"] == 0 && st["agree"] == true;
    st["time_ms_a"] = s[kstep::kTimeMs];
    st["time_ms_b"] = nullptr;
    json nodes = json::array();
    for (const auto& r : s[kstep::kNodes]) {
      const int64_t id = r[knode::kId];
      const json& node = g[kgraph::kNodes][static_cast<size_t>(id)];
      const std::string op = node["op"];
      auto& ot = op_times[op];
      ot[0] += r.value("time_us", 0.0);
      ot[2] += 1;
      if (!r.contains("stats")) continue;
      if (!r.contains("cmp") || !r.contains("ref")) {
        ++no_cmp;
        continue;
      }
      const json& c = r["cmp"];
      json nr;
      nr["id"] = id;
      nr["name"] = node["name"];
      nr["op"] = op;
      json re;
      const double worst = stats_rel_err(r["stats"], r["ref"]["stats"], re);
      nr["rel_err"] = re;
      nr["nonfinite_a"] = nonfinite(r["stats"]);
      nr["nonfinite_b"] = nonfinite(r["ref"]["stats"]);
      for (const char* k : {"max_abs_diff", "cosine", "sqnr_db", "rel_l2", "n_beyond", "max_abs_at"}) nr[k] = c[k];
      nr["local"] = c.value("local", json(nullptr));
      nr["time_us_a"] = r.value("time_us", json(nullptr));
      nr["time_us_b"] = nullptr;
      identical = identical && c["max_abs_diff"] == 0 && c["sqnr_db"] == kSqnrCapDb;

      const double value = o.metric == "rel_err" ? worst : num_or_nan(c[o.metric]);
      if (diverges(o, value) && out["first_divergent"].is_null())
        out["first_divergent"] = {{"step", si}, {"node", id}, {"name", node["name"]}, {"op", op},
                                  {"value", r6(value)}, {"sqnr_db", c["sqnr_db"]}};
      // The node that adds the most error itself: the lowest local SQNR (first on ties).
      const double local = nr["local"].is_object() ? num_or_nan(nr["local"]["sqnr_db"]) : NAN;
      if (std::isfinite(local) && local < worst_local && local < kSqnrCapDb) {
        worst_local = local;
        out["worst_local"] = {{"step", si}, {"node", id}, {"name", node["name"]}, {"op", op},
                              {"sqnr_db", nr["local"]["sqnr_db"]}, {"rel_l2", nr["local"]["rel_l2"]},
                              {"full_sqnr_db", c["sqnr_db"]}};
      }
      nodes.push_back(std::move(nr));
    }
    st["nodes"] = std::move(nodes);
    steps_out.push_back(std::move(st));
  }
  out["steps"] = std::move(steps_out);
  if (no_cmp > 0)
    warnings.push_back(std::to_string(no_cmp) + " node records have no comparison with the reference");
  if (!cm.value(keys::compare_meta::kLocal, false)) warnings.push_back("the backend could not rerun nodes: no local error");
  finish_output(out, n, agree, with_tokens, identical, op_times, false, std::move(warnings));
  return out;
}

}  // namespace minfer::trace
