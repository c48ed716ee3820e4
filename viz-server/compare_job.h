// /api/compare's work on a thread of its own, so the connection that waits for it can watch its
// client and stop the work when the client leaves (issue 31, item 7): httplib 0.11 tells a
// handler nothing about its client, but a content provider can ask whether the socket is
// still open. The work gets a cancel flag (recorder/cancel.h) and stops at its next check.
#pragma once
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "body_cache.h"
#include "cancel.h"

namespace minfer::viz {

class CompareJob {
 public:
  // Starts work(cancel flag) on a new thread.
  explicit CompareJob(std::function<Body(const trace::CancelFlag&)> work);
  // Cancels the work if it is still running and waits for its thread: the work never
  // outlives the answer that waits for it, nor the memory it holds.
  ~CompareJob();
  CompareJob(const CompareJob&) = delete;
  CompareJob& operator=(const CompareJob&) = delete;

  // True once the work has ended (waits up to `timeout`).
  bool wait_for(std::chrono::milliseconds timeout);
  // Asks the work to stop (any thread).
  void cancel() { cancel_.store(true); }
  // Waits for the work to end: its body, or what it threw (rethrown).
  Body result();

 private:
  trace::CancelFlag cancel_{false};
  std::mutex mutex_;
  std::condition_variable ended_;
  bool done_ = false;
  Body body_;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace minfer::viz
