// Stopping a long read of traces from another thread. minfer-viz compares traces for a client
// that may leave before the answer (issue 31, item 7); the reads that take the time (the text
// read and parsed, the schema check, the diff) look at a flag now and then, and once it is set
// they stop with Cancelled. The command-line tools pass no flag.
#pragma once
#include <atomic>
#include <exception>

namespace minfer::trace {

using CancelFlag = std::atomic<bool>;

// Not a minfer::Error: nothing is wrong with the input; nobody waits for the answer any more.
struct Cancelled : std::exception {
  const char* what() const noexcept override { return "cancelled: nobody waits for the answer any more"; }
};

// Throws Cancelled once `flag` (null: never) is set. A relaxed load: cheap enough per value.
inline void stop_if_cancelled(const CancelFlag* flag) {
  if (flag && flag->load(std::memory_order_relaxed)) throw Cancelled();
}

}  // namespace minfer::trace
