#include "file_io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "core/error.h"

namespace minfer::trace {

void write_all_v(int fd, std::vector<iovec> v, int64_t off, const std::string& path) {
  size_t i = 0;
  while (i < v.size()) {
    const int n = static_cast<int>(std::min<size_t>(v.size() - i, IOV_MAX));
    const ssize_t w = ::pwritev(fd, v.data() + i, n, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(path, ": write failed: ", std::strerror(errno));
    }
    off += w;
    for (size_t left = static_cast<size_t>(w); left > 0 && i < v.size();) {
      const size_t take = std::min(left, v[i].iov_len);
      v[i].iov_base = static_cast<char*>(v[i].iov_base) + take;
      v[i].iov_len -= take;
      left -= take;
      if (v[i].iov_len == 0) ++i;
    }
    while (i < v.size() && v[i].iov_len == 0) ++i;
  }
}

void write_all(int fd, const char* p, size_t n, int64_t off, const std::string& path) {
  write_all_v(fd, {iovec{const_cast<char*>(p), n}}, off, path);
}

std::string read_range(int fd, int64_t off, int64_t n, const std::string& path) {
  std::string out(static_cast<size_t>(n), '\0');
  int64_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, out.data() + done, static_cast<size_t>(n - done), off + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail(path, ": read back failed: ", r < 0 ? std::strerror(errno) : "short file");
    done += r;
  }
  return out;
}

}  // namespace minfer::trace
