// A human-readable overview of one trace (minfer-trace summary): the run, the tokens, the
// nodes with the largest |x|, the first NaN/Inf, the time per op type and, on CUDA traces,
// the roofline table (roofline_table.h).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace minfer::trace {

std::string summarize_trace(const nlohmann::json& trace, int top_nodes = 10);

}  // namespace minfer::trace
