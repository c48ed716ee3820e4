// The one way a trace file's bytes are read, by the tools and the server alike: regular files
// only (a FIFO or a device would block or never end), gzip detected by its magic bytes and
// inflated with a cap on the inflated size (a small .json.gz can inflate to gigabytes), and a
// gzip stream must end cleanly: trailing bytes after it or a truncated stream are errors.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cancel.h"
#include "core/environment.h"

namespace minfer::trace {

// Default cap on a trace's JSON text (its inflated size). A 64-step recording of the 0.5b
// preset is 28 MB, so this allows about 600 steps. The parsed document is bounded with it
// (trace_load.cpp). --max-trace-bytes / MINFER_TRACE_MAX_BYTES raise it.
inline constexpr uint64_t kDefaultMaxTraceBytes = uint64_t(256) << 20;

// The cap to use when the user gave none: MINFER_TRACE_MAX_BYTES in the program's environment
// (bytes, or with a K/M/G suffix) when set, else kDefaultMaxTraceBytes. Throws Error when the
// variable is malformed.
uint64_t default_max_trace_bytes(const Environment& env);

// "512M", "2G", "1000" -> bytes; throws Error naming `what` when the text is not a size
// (core/parse_number.h, the one parser of the numbers a user sets).
uint64_t parse_byte_size(const std::string& text, const std::string& what);

struct ReadOptions {
  uint64_t max_bytes = kDefaultMaxTraceBytes;  // cap on the JSON text (inflated size)
  std::string label;                           // the file's name in messages; "" = its path
  // Set from another thread: the read, and the validation of what it read (checked_trace.h),
  // stop with Cancelled (cancel.h). Null: never. Must outlive the read.
  const CancelFlag* cancel = nullptr;
};

// Bytes already in memory, read the same way (e.g. a gzip body the server holds).
struct InMemory {
  std::string_view bytes;
};

// A trace file opened for streaming reads of its JSON text.
class TraceInput {
 public:
  // Opens `path` without blocking and refuses anything but a regular file. Throws Error naming
  // the file when it is missing, unreadable or not a regular file.
  explicit TraceInput(const std::string& path, const ReadOptions& options = {});
  // Reads `source.bytes` (not copied: they must outlive this); options.label names them.
  TraceInput(InMemory source, const ReadOptions& options);
  ~TraceInput();
  TraceInput(const TraceInput&) = delete;
  TraceInput& operator=(const TraceInput&) = delete;

  // Up to n bytes of JSON text; 0 at the end. Throws Error naming the file for corrupt or
  // truncated gzip data, bytes after the gzip stream, or text beyond the cap; Cancelled once
  // options.cancel is set.
  size_t read(char* out, size_t n);

  bool gzip() const { return gzip_; }
  uint64_t bytes_out() const { return out_total_; }
  const std::string& label() const { return label_; }

 private:
  void start();  // detects gzip from the first bytes
  bool fill();   // reads more raw bytes; false at end of file
  size_t read_plain(char* out, size_t n);
  size_t read_gzip(char* out, size_t n);
  void count(size_t n);

  std::string label_;
  uint64_t max_bytes_;
  const CancelFlag* cancel_ = nullptr;
  int fd_ = -1;
  std::string_view memory_;  // the source when fd_ < 0
  bool gzip_ = false, eof_ = false, in_member_ = false;
  z_stream zs_{};
  bool zs_init_ = false;
  std::vector<unsigned char> raw_;
  size_t raw_pos_ = 0, raw_end_ = 0;
  uint64_t raw_consumed_ = 0;  // raw bytes before raw_pos_ (for error offsets)
  uint64_t out_total_ = 0;
};

// The whole JSON text of a trace file (see TraceInput).
std::string read_trace_text(const std::string& path, const ReadOptions& options = {},
                            bool* was_gzip = nullptr);

}  // namespace minfer::trace
