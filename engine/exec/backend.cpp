#include "exec/backend.h"

#include <cstdlib>
#include <string>

namespace minfer {

const char* matmul_path_name(MatmulPath p) { return p == MatmulPath::MMQ ? "mmq" : "f16"; }

MatmulPath matmul_path_from_env() {
  const char* e = std::getenv("MINFER_MMQ");
  return (e && std::string(e) == "0") ? MatmulPath::Float : MatmulPath::MMQ;
}

}  // namespace minfer
