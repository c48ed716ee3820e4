#include "step_pipeline.h"

namespace minfer::trace {

StepPipeline::StepPipeline(int workers, int max_pending) : max_pending_(max_pending < 1 ? 1 : max_pending) {
  if (workers <= 0) return;
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  threads_.emplace_back([this] { write_loop(); });
}

StepPipeline::~StepPipeline() {
  try {
    drain();
  } catch (...) {
  }
  {
    std::lock_guard<std::mutex> l(m_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void StepPipeline::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void StepPipeline::submit(Format format, Write write) {
  if (threads_.empty()) {  // inline
    std::string text = format();
    write(text);
    return;
  }
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [&] { return error_ || static_cast<int>(jobs_.size()) < max_pending_; });
  rethrow_locked();
  jobs_.push_back(Job{std::move(format), std::move(write), {}, false, false});
  cv_.notify_all();
}

void StepPipeline::drain() {
  if (threads_.empty()) return;
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [&] { return error_ || jobs_.empty(); });
  rethrow_locked();
}

void StepPipeline::work() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    Job* job = nullptr;
    cv_.wait(l, [&] {
      if (stop_) return true;
      for (Job& j : jobs_)
        if (!j.taken) return (job = &j), true;
      return false;
    });
    if (!job) return;  // stopping
    job->taken = true;
    Format f = job->format;  // deque references stay valid while the job is queued
    l.unlock();
    std::string text;
    std::exception_ptr err;
    try {
      text = f();
    } catch (...) {
      err = std::current_exception();
    }
    l.lock();
    if (err && !error_) error_ = err;
    job->text = std::move(text);
    job->formatted = true;
    cv_.notify_all();
  }
}

void StepPipeline::write_loop() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || (!jobs_.empty() && jobs_.front().formatted); });
    if (jobs_.empty() || !jobs_.front().formatted) return;  // stopping with nothing ready
    Job& j = jobs_.front();
    l.unlock();
    std::exception_ptr err;
    if (!error_) {
      try {
        j.write(j.text);
      } catch (...) {
        err = std::current_exception();
      }
    }
    l.lock();
    if (err && !error_) error_ = err;
    jobs_.pop_front();
    cv_.notify_all();
  }
}

}  // namespace minfer::trace
