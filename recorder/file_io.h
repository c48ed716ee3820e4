// Positioned, complete reads and writes on a file descriptor: a short write resumes where it
// stopped, EINTR retries, anything else throws Error naming `path` (the trace file and its
// journal write through these).
#pragma once
#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

namespace minfer::trace {

// The pieces one after another from `off`, without joining them first (pwritev).
void write_all_v(int fd, std::vector<iovec> v, int64_t off, const std::string& path);
void write_all(int fd, const char* p, size_t n, int64_t off, const std::string& path);
// Exactly n bytes from `off` (a shorter file is an error).
std::string read_range(int fd, int64_t off, int64_t n, const std::string& path);

}  // namespace minfer::trace
