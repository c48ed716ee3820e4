// SHA-256 of a file (identifies the model a trace was recorded from).
#pragma once
#include <string>

namespace minfer {
std::string sha256_file_hex(const std::string& path);  // throws Error when unreadable
std::string sha256_hex(const void* data, size_t n);
}  // namespace minfer
