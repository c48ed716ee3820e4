// The server's task queue. httplib serves each connection on one thread from its first byte
// to its close, so a fixed pool is held by a few slow clients (one header byte every 2 s never
// trips a read timeout) and /api/health waits behind them. This queue starts another thread
// whenever every thread is busy, up to a cap, so health and new clients keep getting a thread;
// threads above the minimum retire after a while idle.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

#include <httplib.h>

namespace minfer::viz {

class ConnectionThreads : public httplib::TaskQueue {
 public:
  ConnectionThreads(size_t min_threads, size_t max_threads,
                    std::chrono::milliseconds idle_retire = std::chrono::seconds(30));
  ~ConnectionThreads() override;
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs the queued connections, then returns when every thread has finished.
  void shutdown() override;

  size_t threads() const;

 private:
  void start_thread_locked();
  void work();

  mutable std::mutex mutex_;
  std::condition_variable wake_, gone_;
  std::deque<std::function<void()>> jobs_;
  const size_t min_, max_;
  const std::chrono::milliseconds idle_retire_;
  size_t threads_ = 0, idle_ = 0;
  bool stopping_ = false;
};

}  // namespace minfer::viz
