// A human-readable overview of one trace (minfer-trace summary): the run, the tokens, the
// nodes with the largest |x|, the first NaN/Inf, and the time per op type.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace minfer::trace {

std::string summarize_trace(const nlohmann::json& trace, int top_nodes = 10);

}  // namespace minfer::trace
