#include "exclusive_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace minfer::trace {

namespace {

constexpr int kNewFile = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;

[[noreturn]] void another_writer(const std::string& path) {
  fail(path, ": another writer holds it (a run recording this trace is still going): wait for it to end, or "
             "record to another path");
}

// A symlink or a non-regular file where a writer would create its file.
[[noreturn]] void refuse(const std::string& path, mode_t mode) {
  if (S_ISLNK(mode)) fail(path, ": is a symbolic link; refusing to write through it (remove it, or record to another path)");
  fail(path, ": exists and is not a regular file (", S_ISDIR(mode) ? "a directory" : "a device, FIFO or socket",
       "); refusing to replace it");
}

// flock(LOCK_EX | LOCK_NB): false when another open file holds the lock.
bool try_lock(int fd, const std::string& path) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return false;
    fail(path, ": cannot lock: ", std::strerror(errno));
  }
  return true;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

bool still_names(const std::string& path, int fd) {
  struct stat at {}, open {};
  return ::lstat(path.c_str(), &at) == 0 && ::fstat(fd, &open) == 0 && at.st_dev == open.st_dev &&
         at.st_ino == open.st_ino;
}

int claim_file(const std::string& path) {
  int stale = -1;  // a killed run's file, locked by this process while it replaces it
  // Each round either ends or saw the path change under it (another claimant, a rename into
  // place); a few rounds settle any real race.
  for (int round = 0; round < 8; ++round) {
    int fd = ::open(path.c_str(), kNewFile, 0644);
    if (fd >= 0) {
      // Someone who found the new file before it was locked took it for a killed run's: theirs.
      const bool locked = try_lock(fd, path);
      close_fd(stale);
      if (!locked) {
        close_fd(fd);
        another_writer(path);
      }
      if (still_names(path, fd)) return fd;
      close_fd(fd);
      continue;
    }
    if (errno != EEXIST) {
      const int e = errno;
      close_fd(stale);
      fail(path, ": cannot create the trace file: ", std::strerror(e));
    }
    // Something is there: a live writer's file, a killed run's, or a planted link.
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // gone meanwhile
    if (!S_ISREG(st.st_mode)) {
      close_fd(stale);
      refuse(path, st.st_mode);
    }
    int old = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (old < 0) continue;  // gone or replaced meanwhile: look again
    if (!try_lock(old, path)) {
      close_fd(old);
      close_fd(stale);
      another_writer(path);
    }
    if (!still_names(path, old)) {  // its writer renamed it into place, or replaced it
      close_fd(old);
      continue;
    }
    // Unlocked: a killed run's. Removed while locked, so no other claimant takes it over too.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      const int e = errno;
      close_fd(old);
      close_fd(stale);
      fail(path, ": cannot replace the file a killed run left: ", std::strerror(e));
    }
    close_fd(stale);
    stale = old;
  }
  close_fd(stale);
  fail(path, ": cannot claim the trace file: it keeps changing (other writers?)");
}

int create_owned_file(const std::string& path, bool locked) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) refuse(path, st.st_mode);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      fail(path, ": cannot remove a killed run's leftover: ", std::strerror(errno));
  }
  int fd = ::open(path.c_str(), kNewFile, 0644);
  if (fd < 0) {
    if (errno == EEXIST) fail(path, ": appeared while this run created it (another writer?)");
    fail(path, ": cannot create: ", std::strerror(errno));
  }
  if (locked && !try_lock(fd, path)) {
    close_fd(fd);
    another_writer(path);
  }
  return fd;
}

int create_unique_file(const std::string& stem, std::string& name) {
  static std::atomic<unsigned> counter{0};
  for (;;) {
    name = stem + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(name.c_str(), kNewFile, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) fail(name, ": cannot create: ", std::strerror(errno));
  }
}

int lock_existing(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return -1;
    fail(path, ": cannot stat: ", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) refuse(path, st.st_mode);
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  if (!try_lock(fd, path)) {
    close_fd(fd);
    another_writer(path);
  }
  return fd;
}

}  // namespace minfer::trace
