// A fresh scratch folder per test under the build tree.
#pragma once
#include <filesystem>
#include <string>

namespace minfer::trace::testing {

inline std::string temp_dir(const std::string& name) {
  const std::filesystem::path d = std::filesystem::path(MINFER_BINARY_DIR) / "recorder-test-tmp" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

}  // namespace minfer::trace::testing
