// The message of the minfer::Error that f throws, or "(no error)": for tests that check what an
// error says (the engine's tests; recorder/tests/error_of.h is the recorder's, which links this
// layer's headers only through the engine).
#pragma once
#include <functional>
#include <string>

#include "core/error.h"

namespace minfer::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace minfer::testing
