#include "format/graph_json.h"

#include "json_out.h"

namespace minfer::trace {

namespace {
nlohmann::json string_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(sanitize_utf8(s));
}
}  // namespace

nlohmann::json node_to_json(const Node& n) {
  nlohmann::json j;
  j["id"] = n.id;
  j["name"] = sanitize_utf8(n.name);
  j["op"] = op_name(n.op);
  j["shape"] = nlohmann::json::array({n.rows(), n.cols()});
  j["dtype"] = dtype_name(n.dtype);
  j["src"] = n.src;
  j["layer"] = n.layer;
  j["weight"] = string_or_null(n.weight);
  j["weight_type"] = n.weight_type ? nlohmann::json(name(*n.weight_type)) : nlohmann::json(nullptr);
  j["bias"] = string_or_null(n.bias);
  j["fused_from"] = nlohmann::json::array();
  for (const auto& f : n.fused_from) j["fused_from"].push_back(sanitize_utf8(f));
  j["fused_into"] = n.fused_into;
  j["has_output"] = n.has_output && n.executed();
  return j;
}

nlohmann::json graph_to_json(const Graph& g, const std::string& id) {
  nlohmann::json j;
  j["id"] = id.empty() ? std::string(phase_name(g.phase)) : id;
  j["phase"] = phase_name(g.phase);
  j["n_tokens"] = g.n_tokens;
  j["fused"] = g.fused;
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : g.nodes) j["nodes"].push_back(node_to_json(n));
  return j;
}

}  // namespace minfer::trace
