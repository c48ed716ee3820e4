#include "trace_recover.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "exclusive_file.h"
#include "file_io.h"
#include "output_file.h"
#include "format/step_codec.h"
#include "step_journal.h"
#include "format/trace_check.h"
#include "json_read.h"
#include "trace_file.h"

namespace minfer::trace {

namespace {

// The file mapped read-only: a killed run's .partial can be gigabytes, and recovery only scans
// it for line ends and copies it into the result.
struct MappedFile {
  const char* data = nullptr;
  size_t size = 0;
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return;  // killed before the recorder created it: the journal has all
      fail(path, ": cannot open: ", std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      fail(path, ": cannot stat: ", std::strerror(errno));
    }
    size = static_cast<size_t>(st.st_size);
    if (size > 0) {
      void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        ::close(fd);
        fail(path, ": cannot map: ", std::strerror(errno));
      }
      data = static_cast<const char*>(m);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data) ::munmap(const_cast<char*>(data), size);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view view() const { return {data, size}; }
};

constexpr std::string_view kStepsKey = "\n\"steps\":[";

// The .partial cut into its head (through `"steps":[`) and its whole steps, which follow the head
// as they are (each "\n{...}", joined by ","). Every step is a line of its own (trace_file.h);
// only the last one can be cut short (killed mid-write), and a cut step is not a JSON object.
// What is left of the tail it was written over starts otherwise.
struct PartialFile {
  std::optional<std::string_view> head;
  std::string_view steps;  // from the head's end to the end of the last whole step
  size_t count = 0;
};

PartialFile split_partial(std::string_view text) {
  PartialFile p;
  const size_t k = text.find(kStepsKey);
  if (k == std::string_view::npos) return p;  // killed before its head was written
  const size_t body = k + kStepsKey.size();
  p.head = text.substr(0, body);
  size_t at = body, end = body, last_begin = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == ',') line.remove_suffix(1);
    if (line.starts_with("{\"index\":")) {
      ++p.count;
      last_begin = end;
      end = at + line.size();
    }
    at = nl + 1;
  }
  if (p.count > 0) {
    const size_t last = text.find('{', last_begin);
    if (!nlohmann::json::accept(text.substr(last, end - last))) {
      --p.count;
      end = last_begin;  // the previous step's end
    }
  }
  p.steps = text.substr(body, end - body);
  return p;
}

}  // namespace

RecoverResult recover_trace(const std::string& path) {
  RecoverResult r;
  r.partial = path.ends_with(".partial") ? path : path + ".partial";
  const std::string journal_path = journal_path_for(r.partial);
  if (::access(journal_path.c_str(), F_OK) != 0)
    fail(journal_path, ": no trace journal beside ", r.partial,
         " (only a pipelined CUDA run keeps one; a finished or CPU run has nothing to recover)");
  // Held to the end: a run still writing the .partial is refused, not rewritten under it.
  struct Lock {
    int fd;
    ~Lock() {
      if (fd >= 0) ::close(fd);
    }
  } lock{lock_existing(r.partial)};
  const JournalContents j = read_journal(journal_path);
  const MappedFile file(r.partial);
  const PartialFile p = split_partial(file.view());
  r.steps_in_file = p.count;
  r.journal_end = j.stopped;

  // The newest head the run meant to write (a graph that appeared late), else the file's own.
  std::optional<std::string> head;
  if (p.head) head = std::string(*p.head);
  for (const auto& rec : j.records)
    if (rec.is_head) head = rec.payload;
  if (!head) fail(r.partial, ": has no head and its journal none either: nothing to recover");

  const std::vector<std::string>& vocab = j.vocab;
  const StepFormatter formatter(j.format, [&vocab](int32_t id) {
    return id >= 0 && static_cast<size_t>(id) < vocab.size() ? vocab[static_cast<size_t>(id)] : std::string();
  });
  // The result: the file's head (or the journal's newer one), its whole steps as they are, the
  // recovered steps. Only what recovery adds is parsed and checked (the file may be gigabytes).
  std::string added;
  int64_t next = static_cast<int64_t>(p.count);
  for (const auto& rec : j.records) {
    if (rec.is_head || rec.ordinal < next) continue;  // already in the file
    if (rec.ordinal > next)
      fail(journal_path, ": starts at step ", rec.ordinal, " but ", r.partial, " ends after ", next,
           " steps: the steps between are in neither");
    const StepData d = decode_step(rec.payload.data(), rec.payload.size(), journal_path);
    if (r.steps_recovered > 0) added += ",\n";
    added += formatter.text(d);
    ++next;
    ++r.steps_recovered;
  }
  const std::string added_doc = *head + (added.empty() ? "" : "\n") + added + kOpenTail;
  std::string errs;
  for (const std::string& e :
       validate_trace(parse_json_text(added_doc, journal_path, JsonReadOptions{}), 5, r.steps_in_file))
    errs += "\n  " + e;
  if (!errs.empty()) fail(r.partial, ": the steps recovered from ", journal_path, " do not validate:", errs);

  std::string tmp;
  {
    const std::string sep = added.empty() ? "" : p.count > 0 ? ",\n" : "\n";
    const auto piece = [](std::string_view v) { return iovec{const_cast<char*>(v.data()), v.size()}; };
    const int fd = create_unique_file(r.partial + ".recovered", tmp);
    try {
      write_all_v(fd, {piece(*head), piece(p.steps), piece(sep), piece(added), piece(kOpenTail)}, 0, tmp);
      if (::fsync(fd) != 0) fail(tmp, ": sync failed: ", std::strerror(errno));
    } catch (...) {
      ::close(fd);
      ::unlink(tmp.c_str());
      throw;
    }
    ::close(fd);
  }
  try {
    move_into_place(tmp, r.partial);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::unlink(journal_path.c_str()) != 0)
    fail(journal_path, ": recovered into ", r.partial, " but cannot remove the journal: ", std::strerror(errno));
  return r;
}

}  // namespace minfer::trace
