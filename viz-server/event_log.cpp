#include "event_log.h"

#include <algorithm>

namespace minfer::viz {

void EventLog::push(const std::string& type, const std::string& data) {
  auto event = std::make_shared<const std::string>("event: " + type + "\ndata: " + data + "\n\n");
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(event));
  cv_.notify_all();
}

void EventLog::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

std::vector<EventLog::Event> EventLog::read(size_t from, std::chrono::milliseconds wait, bool& done) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, wait, [&] { return events_.size() > from || closed_; });
  const size_t begin = std::min(from, events_.size());
  const size_t end = std::min(events_.size(), begin + kMaxBatch);
  std::vector<Event> out(events_.begin() + static_cast<std::ptrdiff_t>(begin),
                         events_.begin() + static_cast<std::ptrdiff_t>(end));
  done = closed_ && end == events_.size();
  return out;
}

}  // namespace minfer::viz
