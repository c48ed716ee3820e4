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
  work_cv_.notify_all();
  write_cv_.notify_all();
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
    written_.fetch_add(1, std::memory_order_release);
    return;
  }
  auto job = std::make_shared<Job>();
  job->texts.resize(parts.size());
  job->parts = std::move(parts);
  job->write = std::move(write);
  const bool ready = job->parts.empty();
  {
    std::unique_lock<std::mutex> l(m_);
    done_cv_.wait(l, [&] { return error_ || static_cast<int>(jobs_.size()) < max_pending_; });
    if (error_) std::rethrow_exception(error_);
    jobs_.push_back(std::move(job));
  }
  if (ready) write_cv_.notify_one();
  else work_cv_.notify_all();
}

void StepPipeline::drain() {
  if (threads_.empty()) return;
  std::unique_lock<std::mutex> l(m_);
  done_cv_.wait(l, [&] { return error_ || jobs_.empty(); });
  if (error_) std::rethrow_exception(error_);
}

void StepPipeline::wait_written(int64_t n) {
  if (threads_.empty()) return;
  std::unique_lock<std::mutex> l(m_);
  done_cv_.wait(l, [&] { return error_ || written() >= n; });
  if (error_) std::rethrow_exception(error_);
}

bool StepPipeline::idle() {
  if (threads_.empty()) return true;
  std::lock_guard<std::mutex> l(m_);
  if (error_) std::rethrow_exception(error_);
  return jobs_.empty();
}

void StepPipeline::set_error(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> l(m_);
    if (!error_) error_ = std::move(e);
    failed_ = true;
  }
  done_cv_.notify_all();
  write_cv_.notify_all();
}

void StepPipeline::work() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> l(m_);
      work_cv_.wait(l, [&] {
        if (stop_) return true;
        for (const auto& j : jobs_)  // the earliest job first: its step is written soonest
          if (j->has_untaken()) return (job = j), true;
        return false;
      });
      if (!job) return;  // stopping
    }
    format_parts(*job);
  }
}

void StepPipeline::format_parts(Job& job) {
  const size_t n = job.parts.size();
  for (size_t i; (i = job.taken.fetch_add(1, std::memory_order_relaxed)) < n;) {
    if (!failed_.load(std::memory_order_relaxed)) {  // after an error nothing more is formatted
      try {
        job.texts[i] = job.parts[i]();
      } catch (...) {
        set_error(std::current_exception());
      }
    }
    // The last part wakes the writer; the lock orders the wake after its check of ready().
    if (job.formatted.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      std::lock_guard<std::mutex> l(m_);
      write_cv_.notify_one();
    }
  }
}

void StepPipeline::write_loop() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    write_cv_.wait(l, [&] { return stop_ || (!jobs_.empty() && jobs_.front()->ready()); });
    if (jobs_.empty() || !jobs_.front()->ready()) return;  // stopping with nothing ready
    std::shared_ptr<Job> job = jobs_.front();
    l.unlock();
    if (!failed_.load()) {  // after an error nothing more is written
      try {
        job->write(job->texts);
        written_.fetch_add(1, std::memory_order_release);
      } catch (...) {
        set_error(std::current_exception());
      }
    }
    l.lock();
    jobs_.pop_front();
    done_cv_.notify_all();
  }
}

}  // namespace minfer::trace
