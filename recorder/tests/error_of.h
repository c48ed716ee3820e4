// The message of the minfer::Error that f throws, or "(no error)": for tests that check what an
// error says.
#pragma once
#include <functional>
#include <string>

#include "core/error.h"

namespace minfer::trace::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace minfer::trace::testing
