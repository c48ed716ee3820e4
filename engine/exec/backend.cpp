#include "exec/backend.h"

#include <string>

#include "core/error.h"

namespace minfer {

BackendProbes& Backend::probes() {
  static BackendProbes none;  // stateless: every answer is a default
  return none;
}

const char* matmul_path_name(MatmulPath p, const std::string& backend) {
  if (p == MatmulPath::MMQ) return "mmq";
  return backend == "cpu" ? "f32" : "f16";
}

MatmulPath parse_matmul_path(const std::string& name, const std::string& what) {
  if (name == "mmq") return MatmulPath::MMQ;
  if (name == "f32" || name == "f16") return MatmulPath::Float;
  fail(what, ": expected mmq, f32 or f16, got '", name, "'");
}

}  // namespace minfer
