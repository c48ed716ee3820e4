// The traces the server offers: every *.json / *.json.gz (and the .partial a killed recorder
// left) directly inside the trace directories, with parsed summaries cached by path + mtime + size.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "listing_summary.h"

namespace minfer::viz {

struct TraceEntry {
  std::string name;               // file name, the API's handle
  std::filesystem::path path;     // canonical, inside one of the directories
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool gzipped = false;           // by name (.json.gz)
};

// A summary or the reason the file could not be summarized.
struct SummaryOrError {
  std::optional<TraceSummary> summary;
  std::string error;
};

class TraceIndex {
 public:
  // Directories are canonicalized now; throws minfer::Error for one that does not exist.
  // max_trace_bytes caps the JSON text (inflated size) read from any one file.
  explicit TraceIndex(const std::vector<std::string>& dirs,
                      uint64_t max_trace_bytes = trace::kDefaultMaxTraceBytes);

  const std::vector<std::filesystem::path>& dirs() const { return dirs_; }

  // How a file of this index is read: the cap, and its name (never its path) in messages.
  trace::ReadOptions read_options(const TraceEntry& file) const;

  // Every trace file, sorted by name; a name present in several directories is taken
  // from the first. Symlinks whose target lies outside their directory are left out.
  std::vector<TraceEntry> files() const;

  // The trace called `name`, or nullopt when the name is not a plain trace file name or no
  // directory holds such a file (inside it, after resolving symlinks).
  std::optional<TraceEntry> find(const std::string& name) const;

  // Cached summary of a file (re-parsed when its mtime or size changed).
  SummaryOrError summary(const TraceEntry& file);

  // GET /api/traces body: one object per file, "error" set for files that did not parse.
  nlohmann::json list();

 private:
  std::optional<TraceEntry> stat_trace(const std::filesystem::path& dir,
                                      const std::string& name) const;

  struct CacheEntry {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    std::shared_ptr<const SummaryOrError> result;
  };
  std::vector<std::filesystem::path> dirs_;
  uint64_t max_trace_bytes_;
  std::mutex mutex_;
  std::map<std::filesystem::path, CacheEntry> cache_;
};

// True for names ending in .json or .json.gz, or in .partial after those (a recorder's streamed
// file, offered once no writer holds it: what a killed run left). Temporaries (a .gz.tmp a kill
// during the final compression left) are none of these, so never listed or served.
bool has_trace_suffix(const std::string& name);
bool is_partial_trace_name(const std::string& name);

}  // namespace minfer::viz
