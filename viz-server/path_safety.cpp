#include "path_safety.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace fs = std::filesystem;

namespace minfer::viz {
namespace {

bool has_control_char(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// Each '/'-separated segment must be a plain name (so no "", ".", "..", '\\', NUL).
bool segments_are_plain(std::string_view path) {
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string_view seg = path.substr(start, slash == std::string_view::npos
                                                  ? std::string_view::npos
                                                  : slash - start);
    if (!is_plain_file_name(seg)) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

}  // namespace

bool is_plain_file_name(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos)
    return false;
  return !has_control_char(name);
}

bool raw_target_is_suspicious(std::string_view raw_target) {
  std::string_view path = raw_target.substr(0, raw_target.find('?'));
  for (size_t i = 0; i + 2 < path.size(); ++i) {
    if (path[i] != '%') continue;
    std::string code{static_cast<char>(std::tolower(static_cast<unsigned char>(path[i + 1]))),
                     static_cast<char>(std::tolower(static_cast<unsigned char>(path[i + 2])))};
    if (code == "2e" || code == "2f" || code == "5c" || code == "00") return true;
  }
  return false;
}

bool url_path_is_suspicious(std::string_view decoded_path) {
  if (decoded_path.empty() || decoded_path[0] != '/') return true;
  if (decoded_path.find('\0') != std::string_view::npos) return true;
  if (decoded_path == "/") return false;
  std::string_view rest = decoded_path.substr(1);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);  // "/dir/" is fine
  return !segments_are_plain(rest);
}

bool is_within(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (r->empty() && std::next(r) == root.end()) break;  // root given with a trailing '/'
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

std::optional<fs::path> resolve_inside(const fs::path& root, std::string_view relative) {
  if (relative.empty() || !segments_are_plain(relative)) return std::nullopt;
  std::error_code ec;
  fs::path real_root = fs::canonical(root, ec);
  if (ec) return std::nullopt;
  fs::path candidate = real_root / fs::path(std::string(relative));
  // weakly_canonical resolves every symlink along the way, so a link inside the directory
  // that points outside ends up outside here and is refused.
  fs::path real = fs::weakly_canonical(candidate, ec);
  if (ec || !is_within(real_root, real)) return std::nullopt;
  if (!fs::is_regular_file(real, ec)) return std::nullopt;
  return real;
}

}  // namespace minfer::viz
