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

void StepPipeline::submit(Format format, Write write) {
  std::vector<Format> parts;
  parts.push_back(std::move(format));
  submit(std::move(parts), std::move(write));
}

void StepPipeline::submit(std::vector<Format> parts, Write write) {
  if (threads_.empty()) {  // inline
    std::vector<std::string> texts;
    texts.reserve(parts.size());
    for (Format& f : parts) texts.push_back(f());
    write(texts);
    return;
  }
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [&] { return error_ || static_cast<int>(jobs_.size()) < max_pending_; });
  if (error_) std::rethrow_exception(error_);
  Job& j = jobs_.emplace_back();
  j.texts.resize(parts.size());
  j.parts = std::move(parts);
  j.write = std::move(write);
  cv_.notify_all();
}

void StepPipeline::drain() {
  if (threads_.empty()) return;
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [&] { return error_ || jobs_.empty(); });
  if (error_) std::rethrow_exception(error_);
}

void StepPipeline::work() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    Job* job = nullptr;
    cv_.wait(l, [&] {
      if (stop_) return true;
      for (Job& j : jobs_)  // the earliest job first: its step is written soonest
        if (j.taken < j.parts.size()) return (job = &j), true;
      return false;
    });
    if (!job) return;  // stopping
    // The job stays queued (deque references stay valid) until all its parts are formatted.
    const size_t i = job->taken++;
    const bool skip = error_ != nullptr;  // stopped: nothing more is written
    l.unlock();
    std::string text;
    std::exception_ptr err;
    if (!skip) {
      try {
        text = job->parts[i]();
      } catch (...) {
        err = std::current_exception();
      }
    }
    l.lock();
    if (err && !error_) error_ = err;
    job->texts[i] = std::move(text);
    // Wake the writer (job ready) or the callers (error); nobody waits for a lone part.
    if (++job->formatted == job->parts.size() || err) cv_.notify_all();
  }
}

void StepPipeline::write_loop() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || (!jobs_.empty() && jobs_.front().ready()); });
    if (jobs_.empty() || !jobs_.front().ready()) return;  // stopping with nothing ready
    Job& j = jobs_.front();
    const bool failed = error_ != nullptr;  // after an error nothing more is written
    l.unlock();
    std::exception_ptr err;
    if (!failed) {
      try {
        j.write(j.texts);
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
