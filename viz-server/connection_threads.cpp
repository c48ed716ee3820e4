#include "connection_threads.h"

#include <algorithm>
#include <thread>

namespace minfer::viz {

ConnectionThreads::ConnectionThreads(size_t min_threads, size_t max_threads,
                                     std::chrono::milliseconds idle_retire)
    : min_(std::max<size_t>(min_threads, 1)), max_(std::max(max_threads, std::max<size_t>(min_threads, 1))),
      idle_retire_(idle_retire) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (threads_ < min_) start_thread_locked();
}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

void ConnectionThreads::start_thread_locked() {
  ++threads_;
  // Detached: a retiring thread cannot join itself. shutdown() waits on gone_ instead.
  std::thread([this] { work(); }).detach();
}

void ConnectionThreads::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.push_back(std::move(fn));
  if (jobs_.size() > idle_ && threads_ < max_) start_thread_locked();
  wake_.notify_one();
}

void ConnectionThreads::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    const bool woken = wake_.wait_for(lock, idle_retire_, [&] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) {
      if (stopping_ || (!woken && threads_ > min_)) break;
      continue;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
  --threads_;
  // Signals shutdown() only after this thread no longer touches the queue.
  std::notify_all_at_thread_exit(gone_, std::move(lock));
}

void ConnectionThreads::shutdown() {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  wake_.notify_all();
  gone_.wait(lock, [&] { return threads_ == 0; });
}

size_t ConnectionThreads::threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return threads_;
}

}  // namespace minfer::viz
