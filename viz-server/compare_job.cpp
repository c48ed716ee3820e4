#include "compare_job.h"

namespace minfer::viz {

CompareJob::CompareJob(std::function<Body(const trace::CancelFlag&)> work)
    : thread_([this, work = std::move(work)] {
        Body body;
        std::exception_ptr error;
        try {
          body = work(cancel_);
        } catch (...) {
          error = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mutex_);
        body_ = std::move(body);
        error_ = error;
        done_ = true;
        ended_.notify_all();
      }) {}

CompareJob::~CompareJob() {
  cancel();
  if (thread_.joinable()) thread_.join();
}

bool CompareJob::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return ended_.wait_for(lock, timeout, [this] { return done_; });
}

Body CompareJob::result() {
  std::unique_lock<std::mutex> lock(mutex_);
  ended_.wait(lock, [this] { return done_; });
  if (error_) std::rethrow_exception(error_);
  return body_;
}

}  // namespace minfer::viz
