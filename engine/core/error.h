// One exception type for every user-facing failure: the message names the file/field/problem.
#pragma once
#include <stdexcept>
#include <string>

namespace minfer {

struct Error : std::runtime_error {
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Throws Error with the concatenation of the arguments (streamed).
template <class... Args>
[[noreturn]] void fail(const Args&... args);

}  // namespace minfer

#include <sstream>
namespace minfer {
template <class... Args>
[[noreturn]] void fail(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw Error(os.str());
}
}  // namespace minfer
