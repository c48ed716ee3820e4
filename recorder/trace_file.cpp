#include "trace_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "exclusive_file.h"
#include "file_io.h"
#include "output_file.h"

namespace minfer::trace {

namespace {
bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Compresses the finished file (read through its descriptor: the file this run wrote, whatever
// its path names by now) into the new file `out`, which this closes.
void gzip_into(int in, int64_t size, const std::string& src, int out, const std::string& dst) {
  gzFile gz = gzdopen(out, "wb6");
  if (!gz) {
    ::close(out);
    fail(dst, ": cannot start compression");
  }
  bool ok = true;
  try {
    constexpr int64_t kChunk = int64_t(1) << 20;
    for (int64_t off = 0; off < size && ok; off += kChunk) {
      const std::string buf = read_range(in, off, std::min(kChunk, size - off), src);
      ok = gzwrite(gz, buf.data(), static_cast<unsigned>(buf.size())) == static_cast<int>(buf.size());
    }
  } catch (...) {
    gzclose(gz);
    throw;
  }
  if (gzclose(gz) != Z_OK || !ok) fail(dst, ": compression failed");
}

[[noreturn]] void lost_claim(const std::string& partial, const std::string& final_path) {
  fail(partial, ": was removed or replaced while this run wrote it (another writer?); ", final_path,
       " is left as it was");
}

// Beside the target, so the finish is a rename on one file system. A special target
// (MINFER_TRACE=/dev/null) gets its .partial in the temp folder: nothing is created in /dev
// (the pid keeps two runs apart; the claim refuses a link planted there).
std::string partial_path_for(const std::string& final_path) {
  if (!is_special_file(final_path)) return final_path + ".partial";
  const std::string base = std::filesystem::path(final_path).filename().string();
  return (std::filesystem::temp_directory_path() /
          ("minfer-" + std::to_string(::getpid()) + "-" + base + ".partial"))
      .string();
}

}  // namespace

TraceFile::TraceFile(std::string final_path) : final_(std::move(final_path)) {
  check_output_target(final_);  // before the run, not after it
  partial_ = partial_path_for(final_);
  fd_ = claim_file(partial_);
}

TraceFile::~TraceFile() { close(); }

void TraceFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void TraceFile::write_at(const std::string& data, int64_t offset) {
  write_all(fd_, data.data(), data.size(), offset, partial_);
}

void TraceFile::write_head(const std::string& head) {
  if (finished_) fail(final_, ": trace already finished");
  if (head_len_ == 0) {  // the first head, into the claimed empty file
    write_at(head + kOpenTail, 0);
    if (::ftruncate(fd_, static_cast<off_t>(head.size() + std::strlen(kOpenTail))) != 0)
      fail(partial_, ": truncate failed: ", std::strerror(errno));
    head_len_ = steps_end_ = static_cast<int64_t>(head.size());
    return;
  }
  // Rebuild beside and rename over: the old .partial stays valid until the rename, also for a
  // reader that opens it meanwhile (an in-place rewrite showed such a reader a torn file).
  const std::string steps = read_range(fd_, head_len_, steps_end_ - head_len_, partial_);
  // Locked before the rename, so the claim never lapses.
  const std::string tmp = partial_ + ".tmp";
  const int fd = create_owned_file(tmp, /*locked=*/true);
  const std::string all = head + steps + kOpenTail;
  try {
    write_all(fd, all.data(), all.size(), 0, tmp);
    if (!still_names(partial_, fd_)) lost_claim(partial_, final_);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), partial_.c_str()) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(partial_, ": cannot replace: ", std::strerror(e));
  }
  ::close(fd_);
  fd_ = fd;
  head_len_ = static_cast<int64_t>(head.size());
  steps_end_ = head_len_ + static_cast<int64_t>(steps.size());
}

void TraceFile::append_step(const std::vector<std::string>& step_json_parts) {
  if (finished_) fail(final_, ": trace already finished");
  if (head_len_ == 0) fail(partial_, ": step written before the head");
  // Separator, the step's parts, the open tail (longer than the old tail it overwrites, so no
  // truncation is needed), written from where they are: a decode step's text is ~0.5 MB.
  const char* sep = n_steps_ > 0 ? ",\n" : "\n";
  const auto piece = [](const char* p, size_t n) { return iovec{const_cast<char*>(p), n}; };
  std::vector<iovec> v{piece(sep, std::strlen(sep))};
  size_t body = std::strlen(sep);
  for (const std::string& part : step_json_parts) {
    v.push_back(piece(part.data(), part.size()));
    body += part.size();
  }
  v.push_back(piece(kOpenTail, std::strlen(kOpenTail)));
  write_all_v(fd_, std::move(v), steps_end_, partial_);
  steps_end_ += static_cast<int64_t>(body);
  ++n_steps_;
}

void TraceFile::finish(const std::string& timings_json) {
  if (finished_) fail(final_, ": trace already finished");
  const std::string tail = "\n],\"timings\":" + timings_json + ",\"complete\":true}\n";
  write_at(tail, steps_end_);
  if (::ftruncate(fd_, static_cast<off_t>(steps_end_ + static_cast<int64_t>(tail.size()))) != 0)
    fail(partial_, ": truncate failed: ", std::strerror(errno));
  ::fsync(fd_);
  finished_ = true;
  // Only the file this run wrote goes into place; the claim (fd_) is kept until close().
  if (!still_names(partial_, fd_)) lost_claim(partial_, final_);
  if (ends_with(final_, ".gz")) {
    const std::string tmp = partial_ + ".gz.tmp";
    const int out = create_owned_file(tmp);
    try {
      gzip_into(fd_, steps_end_ + static_cast<int64_t>(tail.size()), partial_, out, tmp);
      move_into_place(tmp, final_);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
    ::unlink(partial_.c_str());
  } else {
    move_into_place(partial_, final_);
  }
}

}  // namespace minfer::trace
