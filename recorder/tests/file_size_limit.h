// A test's way to make file writes fail in the middle of a run: while a FileSizeLimit lives,
// the process may write files of at most `bytes` bytes (RLIMIT_FSIZE); a write past that fails
// with EFBIG ("File too large"). SIGXFSZ, which would kill the process instead, is ignored
// meanwhile. Process-wide: every thread's writes are limited, and the old limit and handler come
// back when it goes out of scope.
#pragma once
#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <gtest/gtest.h>

namespace minfer::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &old_), 0) << std::strerror(errno);
    rlimit l = old_;
    l.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &l), 0) << "RLIMIT_FSIZE " << bytes << ": " << std::strerror(errno);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
};

}  // namespace minfer::testing
