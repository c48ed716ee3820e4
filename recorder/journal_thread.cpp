#include "journal_thread.h"

#include <chrono>

namespace minfer::trace {

JournalThread::JournalThread(std::unique_ptr<StepJournal> journal)
    : journal_(std::move(journal)), thread_([this] { loop(); }) {}

JournalThread::~JournalThread() {
  {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return !job_ && !running_; });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void JournalThread::post(Job job) {
  {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return error_ || (!job_ && !running_); });
    if (error_) std::rethrow_exception(error_);
    job_ = std::move(job);
  }
  cv_.notify_all();
}

bool JournalThread::done() {
  std::lock_guard<std::mutex> l(m_);
  if (error_) std::rethrow_exception(error_);
  return !job_ && !running_;
}

void JournalThread::wait() {
  std::unique_lock<std::mutex> l(m_);
  cv_.wait(l, [&] { return error_ || (!job_ && !running_); });
  if (error_) std::rethrow_exception(error_);
}

void JournalThread::loop() {
  std::unique_lock<std::mutex> l(m_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || job_; });
    if (!job_) return;  // stopping
    Job job = std::move(job_);
    job_ = nullptr;
    running_ = true;
    l.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    std::exception_ptr e;
    try {  // no job is posted after an error: post() rethrows it instead
      job(*journal_);
    } catch (...) {
      e = std::current_exception();
    }
    busy_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    l.lock();
    if (e) error_ = e;
    running_ = false;
    cv_.notify_all();
  }
}

}  // namespace minfer::trace
