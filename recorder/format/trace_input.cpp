#include "format/trace_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/parse_number.h"

namespace minfer::trace {

namespace {
constexpr size_t kRawChunk = size_t(1) << 16;
constexpr int kGzipOnly = 15 + 16;  // max window, gzip wrapper only

bool is_gzip_magic(const unsigned char* p) { return p[0] == 0x1f && p[1] == 0x8b; }
}  // namespace

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  return minfer::parse_byte_size(text, what);
}

uint64_t default_max_trace_bytes(const Environment& env) {
  const std::string v = env_text(env, "MINFER_TRACE_MAX_BYTES");
  if (v.empty()) return kDefaultMaxTraceBytes;
  return parse_byte_size(v, "MINFER_TRACE_MAX_BYTES");
}

TraceInput::TraceInput(const std::string& path, const ReadOptions& options)
    : label_(options.label.empty() ? path : options.label),
      max_bytes_(options.max_bytes),
      cancel_(options.cancel),
      raw_(kRawChunk) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) fail(label_, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int e = errno;
    ::close(fd_);
    fail(label_, ": cannot stat: ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fail(label_, ": not a regular file (", S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket",
         "); traces are read from regular files only");
  }
  try {
    start();
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

TraceInput::TraceInput(InMemory source, const ReadOptions& options)
    : label_(options.label),
      max_bytes_(options.max_bytes),
      cancel_(options.cancel),
      memory_(source.bytes),
      raw_(kRawChunk) {
  start();
}

void TraceInput::start() {
  while (raw_end_ < 2 && fill()) {
  }
  gzip_ = raw_end_ >= 2 && is_gzip_magic(raw_.data());
  if (gzip_) {
    if (inflateInit2(&zs_, kGzipOnly) != Z_OK) fail(label_, ": cannot initialise zlib");
    zs_init_ = true;
    in_member_ = true;
  }
}

TraceInput::~TraceInput() {
  if (zs_init_) inflateEnd(&zs_);
  if (fd_ >= 0) ::close(fd_);
}

bool TraceInput::fill() {
  if (eof_) return false;
  if (raw_pos_ > 0) {  // keep the unread bytes, move them to the front
    std::memmove(raw_.data(), raw_.data() + raw_pos_, raw_end_ - raw_pos_);
    raw_consumed_ += raw_pos_;
    raw_end_ -= raw_pos_;
    raw_pos_ = 0;
  }
  if (fd_ < 0) {
    const size_t k = std::min(memory_.size(), raw_.size() - raw_end_);
    if (k == 0) {
      eof_ = true;
      return false;
    }
    std::memcpy(raw_.data() + raw_end_, memory_.data(), k);
    memory_.remove_prefix(k);
    raw_end_ += k;
    return true;
  }
  for (;;) {
    const ssize_t r = ::read(fd_, raw_.data() + raw_end_, raw_.size() - raw_end_);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(label_, ": read error: ", std::strerror(errno));
    if (r == 0) {
      eof_ = true;
      return false;
    }
    raw_end_ += static_cast<size_t>(r);
    return true;
  }
}

void TraceInput::count(size_t n) {
  out_total_ += n;
  if (out_total_ > max_bytes_)
    fail(label_, ": the JSON text is larger than the limit of ", max_bytes_, " bytes",
         gzip_ ? " (inflated size)" : "", "; raise it with --max-trace-bytes or MINFER_TRACE_MAX_BYTES");
}

size_t TraceInput::read(char* out, size_t n) {
  if (n == 0) return 0;
  stop_if_cancelled(cancel_);  // callers read up to 64 KiB at a time
  const size_t got = gzip_ ? read_gzip(out, n) : read_plain(out, n);
  count(got);
  return got;
}

size_t TraceInput::read_plain(char* out, size_t n) {
  if (raw_pos_ == raw_end_ && !fill()) return 0;
  const size_t k = std::min(n, raw_end_ - raw_pos_);
  std::memcpy(out, raw_.data() + raw_pos_, k);
  raw_pos_ += k;
  return k;
}

size_t TraceInput::read_gzip(char* out, size_t n) {
  size_t produced = 0;
  while (produced == 0) {
    if (!in_member_) {
      // Between gzip members: the file ends here, or another member starts. Anything else is
      // not part of a gzip file (gzread would silently stop there).
      while (raw_end_ - raw_pos_ < 2 && fill()) {
      }
      if (raw_pos_ == raw_end_) return 0;
      if (raw_end_ - raw_pos_ < 2 || !is_gzip_magic(raw_.data() + raw_pos_))
        fail(label_, ": unexpected bytes after the gzip data at byte ", raw_consumed_ + raw_pos_,
             " (a corrupt or concatenated-with-garbage file)");
      inflateReset(&zs_);
      in_member_ = true;
    }
    if (raw_pos_ == raw_end_ && !fill()) fail(label_, ": truncated gzip data (the stream ends early)");
    zs_.next_in = raw_.data() + raw_pos_;
    zs_.avail_in = static_cast<uInt>(raw_end_ - raw_pos_);
    zs_.next_out = reinterpret_cast<Bytef*>(out);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, UINT32_MAX));
    const size_t want = zs_.avail_out;
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    raw_pos_ = raw_end_ - zs_.avail_in;
    produced = want - zs_.avail_out;
    if (rc == Z_STREAM_END) in_member_ = false;
    else if (rc != Z_OK && rc != Z_BUF_ERROR)  // Z_BUF_ERROR: needs more input, read above
      fail(label_, ": corrupt gzip data near byte ", raw_consumed_ + raw_pos_, ": ",
           zs_.msg ? zs_.msg : "inflate failed");
  }
  return produced;
}

std::string read_trace_text(const std::string& path, const ReadOptions& options, bool* was_gzip) {
  TraceInput in(path, options);
  std::string text;
  std::vector<char> buf(size_t(1) << 20);
  for (size_t n; (n = in.read(buf.data(), buf.size())) > 0;) text.append(buf.data(), n);
  if (was_gzip) *was_gzip = in.gzip();
  return text;
}

}  // namespace minfer::trace
