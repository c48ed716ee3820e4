// A graph as JSON: the node fields of docs/trace-format.md ("Graph"), shared by the trace
// recorder and `minfer --dump-graph` so both always agree.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "graph/graph.h"

namespace minfer::trace {

nlohmann::json node_to_json(const Node& n);
// id: the graph's id in a trace; "" uses the phase name ("prefill" / "decode").
nlohmann::json graph_to_json(const Graph& g, const std::string& id = "");

}  // namespace minfer::trace
