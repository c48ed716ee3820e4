#include "trace_index.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "core/error.h"
#include "path_safety.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace minfer::viz {

namespace {

bool ends_with(const std::string& name, std::string_view suffix) {
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A recorder holds (flock) the .partial it writes until the trace is in place; a killed one's
// lock is gone with it.
bool held_by_a_writer(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock at once
  return held;
}

}  // namespace

bool has_trace_suffix(const std::string& name) {
  return ends_with(name, ".json") || ends_with(name, ".json.gz") || is_partial_trace_name(name);
}

bool is_partial_trace_name(const std::string& name) {
  return ends_with(name, ".json.partial") || ends_with(name, ".json.gz.partial");
}

TraceIndex::TraceIndex(const std::vector<std::string>& dirs, uint64_t max_trace_bytes)
    : max_trace_bytes_(max_trace_bytes) {
  for (const std::string& d : dirs) {
    std::error_code ec;
    fs::path real = fs::canonical(d, ec);
    if (ec || !fs::is_directory(real, ec)) fail("minfer-viz: traces directory ", d, ": not a directory");
    dirs_.push_back(real);
  }
}

trace::ReadOptions TraceIndex::read_options(const TraceEntry& file) const {
  trace::ReadOptions o;
  o.max_bytes = max_trace_bytes_;
  o.label = file.name;
  return o;
}

std::optional<TraceEntry> TraceIndex::stat_trace(const fs::path& dir,
                                                const std::string& name) const {
  if (!is_plain_file_name(name) || !has_trace_suffix(name)) return std::nullopt;
  std::optional<fs::path> real = resolve_inside(dir, name);
  if (!real) return std::nullopt;
  // A partial trace is offered once its writer is gone (a killed run's file, readable up to
  // its last whole step); the one a run is still writing is not.
  if (is_partial_trace_name(name) && held_by_a_writer(*real)) return std::nullopt;
  std::error_code ec;
  TraceEntry f;
  f.name = name;
  f.path = *real;
  f.size = fs::file_size(*real, ec);
  if (ec) return std::nullopt;
  auto mtime = fs::last_write_time(*real, ec);
  if (ec) return std::nullopt;
  f.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  f.gzipped = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  return f;
}

std::vector<TraceEntry> TraceIndex::files() const {
  std::vector<TraceEntry> out;
  std::set<std::string> seen;
  for (const fs::path& dir : dirs_) {
    std::error_code ec;
    std::vector<std::string> names;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      if (seen.count(name)) continue;
      if (auto f = stat_trace(dir, name)) {
        seen.insert(name);
        out.push_back(std::move(*f));
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TraceEntry& a, const TraceEntry& b) { return a.name < b.name; });
  return out;
}

std::optional<TraceEntry> TraceIndex::find(const std::string& name) const {
  for (const fs::path& dir : dirs_)
    if (auto f = stat_trace(dir, name)) return f;
  return std::nullopt;
}

SummaryOrError TraceIndex::summary(const TraceEntry& file) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(file.path);
    if (it != cache_.end() && it->second.size == file.size && it->second.mtime_ns == file.mtime_ns)
      return *it->second.result;
  }
  // Parse outside the lock: a big trace must not hold up listing the others.
  auto result = std::make_shared<SummaryOrError>();
  try {
    result->summary = summarize_trace_file(file.path.string(), read_options(file));
  } catch (const std::exception& e) {
    result->error = e.what();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  cache_[file.path] = CacheEntry{file.size, file.mtime_ns, result};
  return *result;
}

json TraceIndex::list() {
  json out = json::array();
  std::vector<TraceEntry> all = files();
  for (const TraceEntry& f : all) {
    SummaryOrError s = summary(f);
    json entry = s.summary ? summary_to_json(*s.summary)
                           : json{{"model", nullptr},       {"backend", nullptr},
                                  {"matmul_path", nullptr}, {"steps", nullptr},
                                  {"tokens", nullptr},      {"recorded_at", nullptr},
                                  {"complete", false},      {"error", s.error}};
    entry["name"] = f.name;
    entry["size"] = f.size;
    out.push_back(std::move(entry));
  }
  // Forget summaries of files that are gone.
  std::set<fs::path> present;
  for (const TraceEntry& f : all) present.insert(f.path);
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(cache_, [&](const auto& kv) { return !present.count(kv.first); });
  return out;
}

}  // namespace minfer::viz
