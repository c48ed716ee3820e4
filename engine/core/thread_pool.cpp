#include "core/thread_pool.h"

#include <algorithm>
#include <cstdlib>

namespace minfer {

ThreadPool::ThreadPool(int n) {
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n;
  for (int i = 1; i < n; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    for (;;) {
      int64_t b = next_.fetch_add(job_chunk_);
      if (b >= job_n_) break;
      (*job_)(b, std::min(job_n_, b + job_chunk_), index);
    }
    std::lock_guard<std::mutex> lk(mu_);
    if (--pending_ == 0) cv_done_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n, 0);
    return;
  }
  // Several chunks per thread balance uneven work without much contention.
  int64_t chunk = std::max(grain, (n + n_threads_ * 4 - 1) / (n_threads_ * 4));
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    next_.store(0);
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  cv_start_.notify_all();
  for (;;) {
    int64_t b = next_.fetch_add(chunk);
    if (b >= n) break;
    fn(b, std::min(n, b + chunk), 0);
  }
  std::unique_lock<std::mutex> lk(mu_);
  cv_done_.wait(lk, [&] { return pending_ == 0; });
  job_ = nullptr;
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool([] {
    const char* e = std::getenv("MINFER_THREADS");
    return e ? std::atoi(e) : 0;
  }());
  return pool;
}

}  // namespace minfer
