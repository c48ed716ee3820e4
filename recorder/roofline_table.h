// The roofline table of `minfer-trace summary`: every (step, kernel group) point of the steps
// with kernel records (step_roofline.h), the most GPU time lost against its roof first.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace minfer::trace {

// "" when no step has kernel records (CPU traces, CUPTI off).
std::string roofline_table(const nlohmann::json& trace, int rows = 20);

}  // namespace minfer::trace
