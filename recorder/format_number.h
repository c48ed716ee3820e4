// One printf-style number for the text tables of minfer-trace (summary, roofline).
#pragma once
#include <cstdio>
#include <string>

namespace minfer::trace {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace minfer::trace
