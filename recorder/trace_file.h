// The streamed trace file: "<path>.partial" is valid JSON after every finished step, and a
// finished trace is renamed (or gzipped, for ".gz" paths) into place. Layout:
//   {"format":..,"version":3,\n"meta":{..},\n"graphs":[..],\n"steps":[\n{step},\n{step}
//   \n],"complete":false}            <- the tail, overwritten by the next step
// Every step starts with "\n{" and nothing else in the file does (JSON text escapes raw
// newlines), which lets a reader cut a file killed mid-write back to its last whole step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minfer::trace {

class TraceFile {
 public:
  // Creates "<final_path>.partial" and holds it (exclusive_file.h: a symlink there is refused;
  // while this writer holds it a second writer of the path is refused; a killed run's file is
  // replaced); throws Error naming it when that fails. A directory, or a device that refuses
  // writes (/dev/full), is refused first (output_file.h: check_output_target).
  explicit TraceFile(std::string final_path);
  ~TraceFile();  // close(); an unfinished .partial stays as it is (like a crash would leave it)
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // head: everything before the first step, ending in "\"steps\":[". Before the first step it
  // is written in place; later (a new graph appeared) the file is rebuilt beside and renamed
  // over, so the .partial is never invalid.
  void write_head(const std::string& head);
  // One step object (no newlines inside), then the tail, in one write.
  // One step object, given as the pieces whose concatenation it is (written without joining).
  void append_step(const std::vector<std::string>& step_json_parts);
  // Writes the final tail, syncs, and moves the file to final_path. Still holds the claim, so
  // that the files beside it (the journal) are removed before another writer may start.
  void finish(const std::string& timings_json);
  // Lets go of the file (and the claim on its path).
  void close();

  const std::string& final_path() const { return final_; }
  const std::string& partial_path() const { return partial_; }
  int steps() const { return n_steps_; }
  int64_t bytes() const { return steps_end_; }

 private:
  void write_at(const std::string& data, int64_t offset);
  std::string final_, partial_;
  int fd_ = -1;
  int64_t head_len_ = 0, steps_end_ = 0;
  int n_steps_ = 0;
  bool finished_ = false;
};

// The tail of an unfinished file; readers use it to close a salvaged prefix.
inline constexpr const char* kOpenTail = "\n],\"complete\":false}\n";

}  // namespace minfer::trace
