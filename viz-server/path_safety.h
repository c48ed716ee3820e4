// The server's only gate between a URL and the file system: a path is served only when it
// names a regular file whose real path (symlinks resolved) lies inside the served directory.
#pragma once
#include <filesystem>
#include <optional>
#include <string_view>

namespace minfer::viz {

// A single file name: non-empty, not "." or "..", no '/', '\\', NUL or control characters.
bool is_plain_file_name(std::string_view name);

// True when the raw request target (before %-decoding) hides something the decoded path
// would not show: an encoded dot, slash, backslash or NUL ("%2e", "%2f", "%5c", "%00").
bool raw_target_is_suspicious(std::string_view raw_target);

// True when the decoded URL path is not a clean absolute path: no leading '/', a NUL,
// a backslash, an empty segment ("//"), or a "." / ".." segment.
bool url_path_is_suspicious(std::string_view decoded_path);

// True when `p` equals `root` or lies below it (both already canonical).
bool is_within(const std::filesystem::path& root, const std::filesystem::path& p);

// Resolves `relative` (URL path segments without the leading '/', already decoded) under
// `root`. Returns the canonical path of a regular file inside canonical(root), or nullopt
// for anything else: traversal, absolute paths, NUL, symlinks leading out, missing files.
std::optional<std::filesystem::path> resolve_inside(const std::filesystem::path& root,
                                                    std::string_view relative);

}  // namespace minfer::viz
