#include "trace_recover.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "output_file.h"
#include "step_codec.h"
#include "step_journal.h"
#include "trace_check.h"
#include "trace_file.h"
#include "trace_load.h"

namespace minfer::trace {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open: ", std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail(path, ": read failed");
  return s.str();
}

constexpr std::string_view kStepsKey = "\n\"steps\":[";

// The .partial cut into its head (through `"steps":[`) and its whole steps. Every step starts on
// a line of its own and holds no newline (trace_file.h); only the last step can be cut short
// (killed mid-write): a cut step is not a JSON object. What is left of the tail it was written
// over starts otherwise.
struct PartialFile {
  std::optional<std::string> head;
  std::vector<std::string_view> steps;
};

PartialFile split_partial(const std::string& text) {
  PartialFile p;
  const size_t k = text.find(kStepsKey);
  if (k == std::string::npos) return p;  // killed before its head was written
  const size_t body = k + kStepsKey.size();
  p.head = text.substr(0, body);
  size_t at = body;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + at, nl - at);
    if (!line.empty() && line.back() == ',') line.remove_suffix(1);
    if (line.starts_with("{\"index\":")) p.steps.push_back(line);
    at = nl + 1;
  }
  if (!p.steps.empty() && !nlohmann::json::accept(p.steps.back())) p.steps.pop_back();
  return p;
}

}  // namespace

RecoverResult recover_trace(const std::string& path, const ReadOptions& read) {
  RecoverResult r;
  r.partial = ends_with(path, ".partial") ? path : path + ".partial";
  const std::string journal_path = r.partial + ".journal";
  if (::access(journal_path.c_str(), F_OK) != 0)
    fail(journal_path, ": no trace journal beside ", r.partial,
         " (only a pipelined CUDA run keeps one; a finished or CPU run has nothing to recover)");
  const JournalContents j = read_journal(journal_path);
  const std::string text = ::access(r.partial.c_str(), F_OK) == 0 ? read_all(r.partial) : std::string();
  PartialFile p = split_partial(text);
  r.steps_in_file = p.steps.size();
  r.journal_end = j.stopped;

  // The newest head the run meant to write (a graph that appeared late), else the file's own.
  std::optional<std::string> head = p.head;
  for (const auto& rec : j.records)
    if (rec.is_head) head = rec.payload;
  if (!head) fail(r.partial, ": has no head and its journal none either: nothing to recover");

  const std::vector<std::string>& vocab = j.vocab;
  const StepFormatter formatter(j.format, [&vocab](int32_t id) {
    return id >= 0 && static_cast<size_t>(id) < vocab.size() ? vocab[static_cast<size_t>(id)] : std::string();
  });
  std::string out = *head;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    out += i ? ",\n" : "\n";
    out += p.steps[i];
  }
  int64_t next = static_cast<int64_t>(p.steps.size());
  for (const auto& rec : j.records) {
    if (rec.is_head || rec.ordinal < next) continue;  // already in the file
    if (rec.ordinal > next)
      fail(journal_path, ": starts at step ", rec.ordinal, " but ", r.partial, " ends after ", next,
           " steps: the steps between are in neither");
    const StepData d = decode_step(rec.payload.data(), rec.payload.size(), journal_path);
    out += next ? ",\n" : "\n";
    out += formatter.text(d);
    ++next;
    ++r.steps_recovered;
  }
  out += kOpenTail;

  // Checked before it replaces anything.
  const std::string tmp = r.partial + ".recovered.tmp";
  write_output_file(tmp, out);
  try {
    const nlohmann::json t = load_trace(tmp, nullptr, read);
    std::string errs;
    for (const std::string& e : validate_trace(t, 5)) errs += "\n  " + e;
    if (!errs.empty()) fail(r.partial, ": the recovered trace does not validate:", errs);
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
