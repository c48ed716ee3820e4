// The Server-Sent Events of one live run, kept whole so a listener that connects late (or
// reconnects) gets them all. One log is shared by every listener: an event is formatted once
// and never copied; a listener keeps only its position and the batch it is sending, so a
// hundred listeners of a finished 200,000-event run cost a hundred small batches, not a
// hundred copies of the run.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace minfer::viz {

class EventLog {
 public:
  using Event = std::shared_ptr<const std::string>;
  // Events one read hands out at most.
  static constexpr size_t kMaxBatch = 256;

  // Appends "event: <type>\ndata: <data>\n\n"; wakes the waiting readers.
  void push(const std::string& type, const std::string& data);
  void close();
  // Up to kMaxBatch events from index `from`; waits up to `wait` for one. `done` when the log
  // is closed and this batch reaches its end.
  std::vector<Event> read(size_t from, std::chrono::milliseconds wait, bool& done);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> events_;
  bool closed_ = false;
};

}  // namespace minfer::viz
