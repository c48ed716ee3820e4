#include "trace_diff.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
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
  const std::string sa = str_at(a, {"meta", "model", "sha256"}), sb = str_at(b, {"meta", "model", "sha256"});
  if (sa != sb)
    fail("cannot compare traces of different models: ", o.label_a, " is ", str_at(a, {"meta", "model", "file"}),
         " (sha256 ", sa.substr(0, 12), "), ", o.label_b, " is ", str_at(b, {"meta", "model", "file"}),
         " (sha256 ", sb.substr(0, 12), ")");
  std::map<std::string, const json*> gb;
  for (const auto& g : b["graphs"]) gb[g["id"].get<std::string>()] = &g;
  for (const auto& g : a["graphs"]) {
    const std::string id = g["id"];
    auto it = gb.find(id);
    if (it == gb.end()) {
      bool used = false;
      for (const auto& s : b["steps"]) used = used || s["graph"] == id;
      if (!used) continue;  // b never got that far
      fail("cannot compare: graph '", id, "' of ", o.label_a, " is missing from ", o.label_b);
    }
    const auto &na = g["nodes"], &nb = (*it->second)["nodes"];
    if (na.size() != nb.size())
      fail("cannot compare different graphs: '", id, "' has ", na.size(), " nodes in ", o.label_a, " and ",
           nb.size(), " in ", o.label_b);
    for (size_t i = 0; i < na.size(); ++i)
      if (na[i]["name"] != nb[i]["name"] || na[i]["op"] != nb[i]["op"])
        fail("cannot compare different graphs: node ", i, " of '", id, "' is ", na[i]["name"].get<std::string>(),
             " (", na[i]["op"].get<std::string>(), ") in ", o.label_a, " but ", nb[i]["name"].get<std::string>(),
             " (", nb[i]["op"].get<std::string>(), ") in ", o.label_b);
  }
  if (!a["steps"].empty() && !b["steps"].empty()) {
    std::vector<int64_t> ta, tb;
    for (const auto& t : a["steps"][0]["tokens"]) ta.push_back(t["id"]);
    for (const auto& t : b["steps"][0]["tokens"]) tb.push_back(t["id"]);
    if (ta != tb)
      fail("cannot compare runs of different prompts: the prefill tokens of ", o.label_a, " and ", o.label_b, " differ");
  }
}

json side_info(const json& t, const std::string& label) {
  return {{"file", label},
          {"matmul_path", str_at(t, {"meta", "matmul_path"})},
          {"backend", str_at(t, {"meta", "backend"})},
          {"device", str_at(t, {"meta", "device"})},
          {"complete", t.value("complete", false)},
          {"steps", t["steps"].size()}};
}

}  // namespace

json diff(const json& a, const json& b, const DiffOptions& o) {
  static const std::set<std::string> metrics = {"sqnr_db", "cosine", "max_abs_diff", "rel_err"};
  if (!metrics.count(o.metric))
    fail("diff: unknown metric '", o.metric, "' (use sqnr_db, cosine, max_abs_diff or rel_err)");
  for (const json* t : {&a, &b})
    if (!t->is_object() || !t->contains("graphs") || !t->contains("steps") || (*t)["version"] != 2)
      fail("diff: ", t == &a ? o.label_a : o.label_b, " is not a minfer-trace version 2 document");
  check_same_run(a, b, o);
  const bool below_diverges = o.metric == "sqnr_db" || o.metric == "cosine";

  std::map<std::string, const json*> graphs;
  for (const auto& g : a["graphs"]) graphs[g["id"].get<std::string>()] = &g;

  json out;
  out["a"] = side_info(a, o.label_a);
  out["b"] = side_info(b, o.label_b);
  out["model"] = {{"file", str_at(a, {"meta", "model", "file"})}, {"sha256", str_at(a, {"meta", "model", "sha256"})}};
  out["threshold"] = {{"metric", o.metric}, {"value", o.threshold}};
  out["first_divergent"] = nullptr;
  out["steps"] = json::array();
  json warnings = json::array();
  if (!a.value("complete", false)) warnings.push_back(o.label_a + " is an unfinished trace");
  if (!b.value("complete", false)) warnings.push_back(o.label_b + " is an unfinished trace");
  if (a["steps"].size() != b["steps"].size())
    warnings.push_back("step counts differ (" + std::to_string(a["steps"].size()) + " vs " +
                       std::to_string(b["steps"].size()) + "): the first " +
                       std::to_string(std::min(a["steps"].size(), b["steps"].size())) + " are compared");

  std::map<std::string, std::array<double, 3>> op_times;  // op -> us_a, us_b, count
  size_t agree = 0, with_tokens = 0, no_grid = 0;
  bool inputs_agree = true;
  const size_t n = std::min(a["steps"].size(), b["steps"].size());
  for (size_t si = 0; si < n; ++si) {
    const json &sa = a["steps"][si], &sb = b["steps"][si];
    const json& g = *graphs.at(sa["graph"].get<std::string>());
    json st;
    st["index"] = si;
    st["phase"] = sa["phase"];
    const bool la = !sa["logits"].is_null(), lb = !sb["logits"].is_null();
    st["token_a"] = la ? sa["logits"]["chosen"] : json(nullptr);
    st["token_b"] = lb ? sb["logits"]["chosen"] : json(nullptr);
    st["text_a"] = la ? sa["logits"]["chosen_text"] : json("");
    st["text_b"] = lb ? sb["logits"]["chosen_text"] : json("");
    st["agree"] = la && lb && st["token_a"] == st["token_b"];
    if (la && lb) {
      ++with_tokens;
      agree += st["agree"].get<bool>();
    }
    // Once one step's input tokens differ, every later step differs too (its KV cache holds the
    // other tokens), even where the tokens happen to match again.
    inputs_agree = inputs_agree && sa["tokens"] == sb["tokens"];
    st["inputs_agree"] = inputs_agree;
    st["kl_topk"] = la && lb ? r6(kl_topk(sa["logits"], sb["logits"])) : json(nullptr);
    st["entropy_a"] = la ? sa["logits"]["entropy"] : json(nullptr);
    st["entropy_b"] = lb ? sb["logits"]["entropy"] : json(nullptr);
    st["time_ms_a"] = sa["time_ms"];
    st["time_ms_b"] = sb["time_ms"];

    std::map<int64_t, const json*> rb;
    for (const auto& r : sb["nodes"]) rb[r["id"].get<int64_t>()] = &r;
    json nodes = json::array();
    for (const auto& ra : sa["nodes"]) {
      const int64_t id = ra["id"];
      auto it = rb.find(id);
      if (it == rb.end()) continue;
      const json& rbj = *it->second;
      const json& node = g["nodes"][static_cast<size_t>(id)];
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
      double worst = 0;
      for (const char* k : {"min", "max", "mean", "absmean", "std"}) {
        const double e = rel_err(ra["stats"][k], rbj["stats"][k]);
        re[k] = r6(e);
        if (std::isfinite(e)) worst = std::max(worst, e);
      }
      nr["rel_err"] = re;
      nr["nonfinite_a"] = ra["stats"]["nan"].get<int64_t>() + ra["stats"]["inf"].get<int64_t>();
      nr["nonfinite_b"] = rbj["stats"]["nan"].get<int64_t>() + rbj["stats"]["inf"].get<int64_t>();
      const GridCompare gc = compare_grids(ra, rbj);
      nr["max_abs_diff"] = gc.ok ? r6(gc.max_abs) : json(nullptr);
      nr["cosine"] = gc.ok ? r6(gc.cosine) : json(nullptr);
      nr["sqnr_db"] = gc.ok ? r6(gc.sqnr_db) : json(nullptr);
      if (!gc.ok) ++no_grid;
      nr["time_us_a"] = ra.value("time_us", json(nullptr));
      nr["time_us_b"] = rbj.value("time_us", json(nullptr));

      double value = std::nan("");
      if (o.metric == "rel_err") value = worst;
      else if (gc.ok) value = o.metric == "sqnr_db" ? gc.sqnr_db : o.metric == "cosine" ? gc.cosine : gc.max_abs;
      const bool diverged = std::isfinite(value) && (below_diverges ? value < o.threshold : value > o.threshold);
      // Never blamed on a node whose step saw other inputs: that is not the node's error.
      if (diverged && inputs_agree && out["first_divergent"].is_null())
        out["first_divergent"] = {{"step", si}, {"node", id}, {"name", node["name"]}, {"op", op},
                                  {"value", r6(value)}, {"sqnr_db", nr["sqnr_db"]}};
      nodes.push_back(std::move(nr));
    }
    st["nodes"] = std::move(nodes);
    out["steps"].push_back(std::move(st));
  }
  if (no_grid > 0 && o.metric != "rel_err")
    warnings.push_back(std::to_string(no_grid) + " node records have no comparable value grids (stats-only "
                       "trace or different grid options): they cannot diverge by " + o.metric);
  out["steps_compared"] = n;
  out["token_agreement"] = with_tokens ? r6(static_cast<double>(agree) / with_tokens) : json(nullptr);
  json ops = json::array();
  for (auto& [op, t] : op_times)
    ops.push_back({{"op", op}, {"us_a", r6(t[0])}, {"us_b", r6(t[1])}, {"count", static_cast<int64_t>(t[2])}});
  std::sort(ops.begin(), ops.end(), [](const json& x, const json& y) {
    return num_or_nan(x["us_a"]) > num_or_nan(y["us_a"]);
  });
  out["op_times"] = std::move(ops);
  out["warnings"] = std::move(warnings);
  return out;
}

}  // namespace minfer::trace
