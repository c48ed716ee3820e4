#include "cuda/pdl.h"

#include <atomic>

namespace minfer::cuda {
namespace {

std::atomic<bool>& flag() {
  static std::atomic<bool> on{true};
  return on;
}

}  // namespace

bool pdl_enabled() { return flag().load(std::memory_order_relaxed); }

void set_pdl_enabled(bool on) { flag().store(on, std::memory_order_relaxed); }

}  // namespace minfer::cuda
