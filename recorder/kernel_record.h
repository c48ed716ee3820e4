// One GPU kernel execution as a trace keeps it (CUPTI activity record attributed to a node).
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace minfer::trace {

struct KernelRecord {
  std::string name;                  // demangled kernel name
  int node = -1;                     // node id of the step's graph, -1 when unattributed
  int64_t start_ns = 0;              // relative to the step start
  int64_t duration_ns = 0;
  std::array<int, 3> grid{1, 1, 1};
  std::array<int, 3> block{1, 1, 1};
  int registers = 0;                 // per thread
  int64_t shared_bytes = 0;          // static + dynamic shared memory per block
};

}  // namespace minfer::trace
