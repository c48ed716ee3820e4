#include "cuda/pdl.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace minfer::cuda {
namespace {

std::atomic<bool>& flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("MINFER_PDL");
    return !(v && std::string(v) == "0");
  }()};
  return on;
}

}  // namespace

bool pdl_enabled() { return flag().load(std::memory_order_relaxed); }

void set_pdl_enabled(bool on) { flag().store(on, std::memory_order_relaxed); }

}  // namespace minfer::cuda
