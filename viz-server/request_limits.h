// What one request may make the server build. A trace past a limit is refused (413) with a
// message naming the limit and the flag that raises it, before anything per step is built.
#pragma once
#include <cstdint>

#include "core/error.h"

namespace minfer::viz {

// Steps of one trace the slice index, its step slices and /api/compare handle (--max-steps).
inline constexpr uint64_t kDefaultMaxSteps = 100000;

struct LimitExceeded : Error {
  using Error::Error;
};

}  // namespace minfer::viz
