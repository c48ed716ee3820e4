#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "core/error.h"
#include "exclusive_file.h"

namespace minfer::trace {

namespace {

void write_all(int fd, const char* p, size_t n, const std::string& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(what, ": write failed: ", w < 0 ? std::strerror(errno) : "no progress");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void close_checked(int fd, const std::string& what) {
  if (::close(fd) != 0) fail(what, ": write failed on close: ", std::strerror(errno));
}

// Opens an existing special file for writing, without O_CREAT or O_TRUNC.
int open_special(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open for writing: ", std::strerror(errno));
  return fd;
}

void write_stdout(std::string_view text) {
  std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
  finish_stdout();
}

}  // namespace

bool is_special_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

void check_output_target(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) fail(path, ": is a directory; a trace or output goes to a file");
  if (!S_ISCHR(st.st_mode)) return;
  const int fd = open_special(path);
  if (::write(fd, "", 0) < 0) {
    const int e = errno;
    ::close(fd);
    fail(path, ": cannot write: ", std::strerror(e));
  }
  ::close(fd);
}

void write_output_file(const std::string& path, std::string_view text) {
  if (path == "-") return write_stdout(text);
  if (is_special_file(path)) {
    const int fd = open_special(path);
    try {
      write_all(fd, text.data(), text.size(), path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    close_checked(fd, path);
    return;
  }
  // A name of its own: two writers of one path never share a temporary, nor follow a link.
  std::string tmp;
  const int fd = create_unique_file(path, tmp);
  try {
    write_all(fd, text.data(), text.size(), tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  try {
    close_checked(fd, tmp);
    move_into_place(tmp, path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

void move_into_place(const std::string& tmp, const std::string& path) {
  if (!is_special_file(path)) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      fail(path, ": cannot move the finished file into place: ", std::strerror(errno));
    return;
  }
  const int in = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) fail(tmp, ": cannot reopen: ", std::strerror(errno));
  int out = -1;
  try {
    out = open_special(path);
    std::vector<char> buf(size_t(1) << 20);
    for (;;) {
      const ssize_t r = ::read(in, buf.data(), buf.size());
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail(tmp, ": read failed: ", std::strerror(errno));
      if (r == 0) break;
      write_all(out, buf.data(), static_cast<size_t>(r), path);
    }
    const int fd = out;
    out = -1;
    close_checked(fd, path);
  } catch (...) {
    if (out >= 0) ::close(out);
    ::close(in);
    throw;
  }
  ::close(in);
  ::unlink(tmp.c_str());
}

void finish_stdout() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int e = errno;
  if (!std::cout.good() || !flushed || std::ferror(stdout))
    fail("standard output: write failed", e ? std::string(": ") + std::strerror(e) : std::string(),
         " (disk full or the reader went away?)");
}

}  // namespace minfer::trace
