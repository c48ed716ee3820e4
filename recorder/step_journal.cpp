#include "step_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "exclusive_file.h"
#include "file_io.h"
#include "format/step_codec.h"

namespace minfer::trace {

namespace {

constexpr char kMagic[8] = {'M', 'I', 'N', 'F', 'E', 'R', 'J', '1'};
constexpr uint32_t kRecordMagic = 0x3152'4A4D;  // "MJR1"
constexpr uint32_t kHead = 1, kStep = 2;

struct RecordHeader {
  uint32_t magic = 0, kind = 0;
  uint64_t epoch = 0;
  int64_t ordinal = 0;
  uint64_t size = 0;
  uint64_t check = 0;
};
static_assert(sizeof(RecordHeader) == 40);

// A header torn across two pages by a kill fails this.
uint64_t header_check(const RecordHeader& h) {
  uint64_t x = 0x9E37'79B9'7F4A'7C15ull;
  for (uint64_t v : {uint64_t{h.magic}, uint64_t{h.kind}, h.epoch, static_cast<uint64_t>(h.ordinal), h.size}) {
    x ^= v + 0x9E37'79B9'7F4A'7C15ull + (x << 6) + (x >> 2);
    x *= 0xBF58'476D'1CE4'E5B9ull;
  }
  return x;
}

template <class T> void put(std::string& o, const T& v) { o.append(reinterpret_cast<const char*>(&v), sizeof v); }

template <class T> T take(const std::string& s, size_t& at, const std::string& path) {
  T v;
  if (s.size() - at < sizeof v) fail(path, ": journal header ends early");
  std::memcpy(&v, s.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

}  // namespace

StepJournal::StepJournal(std::string path, const StepFormat& f, const std::vector<std::string>& vocab)
    : path_(std::move(path)) {
  fd_ = create_owned_file(path_);  // the trace file's writer holds the claim on its name
  std::string body;
  put(body, static_cast<uint8_t>(f.spec.stats));
  for (int32_t v : {f.spec.grid_rows, f.spec.grid_cols, f.spec.hist_bins, f.top_k, f.outliers}) put(body, v);
  put(body, static_cast<uint64_t>(vocab.size()));
  for (const std::string& t : vocab) {
    put(body, static_cast<uint32_t>(t.size()));
    body += t;
  }
  std::string head(sizeof kMagic, '\0');  // the magic goes in last: a cut header has none
  put(head, static_cast<uint64_t>(body.size()));
  try {
    write_all_v(fd_, {iovec{head.data(), head.size()}, iovec{body.data(), body.size()}}, 0, path_);
    write_all(fd_, kMagic, sizeof kMagic, 0, path_);
  } catch (...) {  // a journal that could not start is not left half written (a full disk)
    ::close(fd_);
    ::unlink(path_.c_str());
    throw;
  }
  records_start_ = end_ = static_cast<int64_t>(head.size() + body.size());
  bytes_written_ = end_;
}

StepJournal::~StepJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void StepJournal::start_over() {
  end_ = records_start_;
  records_ = 0;
  ++epoch_;
}

void StepJournal::append(uint32_t kind, int64_t ordinal, std::string_view payload) {
  if (fd_ < 0) fail(path_, ": journal already removed");
  RecordHeader h{kRecordMagic, kind, epoch_, ordinal, payload.size(), 0};
  h.check = header_check(h);
  // The bytes first, behind a zeroed header; the header once they are all in.
  static const RecordHeader zero{};
  write_all_v(fd_, {iovec{const_cast<RecordHeader*>(&zero), sizeof zero},
                    iovec{const_cast<char*>(payload.data()), payload.size()}},
              end_, path_);
  write_all(fd_, reinterpret_cast<const char*>(&h), sizeof h, end_, path_);
  end_ += static_cast<int64_t>(sizeof h + payload.size());
  bytes_written_ += static_cast<int64_t>(sizeof h + payload.size());
  ++records_;
}

void StepJournal::append_head(int64_t steps_before, const std::string& head) { append(kHead, steps_before, head); }

void StepJournal::append_step(int64_t ordinal, const StepData& d) { append(kStep, ordinal, encode_step(d, buf_)); }

void StepJournal::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT)
    fail(path_, ": cannot remove the trace journal: ", std::strerror(errno));
}

JournalContents read_journal(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open the trace journal: ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, ": cannot stat: ", std::strerror(errno));
  const int64_t size = st.st_size;
  if (size < 16) fail(path, ": not a trace journal (", size, " bytes, no header)");
  const std::string head = read_range(fd, 0, 16, path);
  if (std::memcmp(head.data(), kMagic, sizeof kMagic) != 0)
    fail(path, ": not a trace journal, or its header was not finished (no MINFERJ1 magic)");
  uint64_t body_size = 0;
  std::memcpy(&body_size, head.data() + 8, 8);
  if (body_size > static_cast<uint64_t>(size - 16)) fail(path, ": journal header longer than the file");
  const std::string body = read_range(fd, 16, static_cast<int64_t>(body_size), path);

  JournalContents c;
  size_t at = 0;
  c.format.spec.stats = take<uint8_t>(body, at, path) != 0;
  c.format.spec.grid_rows = take<int32_t>(body, at, path);
  c.format.spec.grid_cols = take<int32_t>(body, at, path);
  c.format.spec.hist_bins = take<int32_t>(body, at, path);
  c.format.top_k = take<int32_t>(body, at, path);
  c.format.outliers = take<int32_t>(body, at, path);
  const uint64_t n_vocab = take<uint64_t>(body, at, path);
  if (n_vocab > body.size()) fail(path, ": journal vocabulary size ", n_vocab, " is beyond its header");
  c.vocab.reserve(n_vocab);
  for (uint64_t i = 0; i < n_vocab; ++i) {
    const uint32_t n = take<uint32_t>(body, at, path);
    if (body.size() - at < n) fail(path, ": journal header ends early");
    c.vocab.emplace_back(body.data() + at, n);
    at += n;
  }
  if (at != body.size()) fail(path, ": journal header has ", body.size() - at, " bytes too many");

  int64_t off = 16 + static_cast<int64_t>(body_size);
  uint64_t epoch = 0;
  int64_t next_step = -1;
  while (off < size) {
    if (size - off < static_cast<int64_t>(sizeof(RecordHeader))) {
      c.stopped = "a record cut short";
      break;
    }
    RecordHeader h;
    const std::string hb = read_range(fd, off, sizeof h, path);
    std::memcpy(&h, hb.data(), sizeof h);
    if (h.magic != kRecordMagic || h.check != header_check(h) || (h.kind != kHead && h.kind != kStep)) {
      c.stopped = h.magic == 0 ? "a record the run had not finished" : "an invalid record header";
      break;
    }
    if (c.records.empty()) epoch = h.epoch;
    if (h.epoch != epoch) {
      c.stopped = "records of an earlier start-over";
      break;
    }
    if (h.size > static_cast<uint64_t>(size - off) - sizeof h) {
      c.stopped = "a record cut short";
      break;
    }
    if (h.kind == kStep) {
      if (next_step >= 0 && h.ordinal != next_step) {
        c.stopped = "a step out of order";
        break;
      }
      next_step = h.ordinal + 1;
    }
    c.records.push_back({h.kind == kHead, h.ordinal,
                         read_range(fd, off + static_cast<int64_t>(sizeof h), static_cast<int64_t>(h.size), path)});
    off += static_cast<int64_t>(sizeof h + h.size);
  }
  return c;
}

}  // namespace minfer::trace
