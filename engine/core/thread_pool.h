// A fixed pool of worker threads for the CPU backend: parallel_for splits [0, n) into chunks.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace minfer {

// The most threads a pool may start, whoever asks (--threads, MINFER_THREADS, code): past it a
// typo would start a machine-freezing number of threads.
inline constexpr int kMaxThreads = 1024;

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads <= 0: hardware concurrency; > kMaxThreads: Error
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Calls fn(begin, end, thread_index) over disjoint chunks covering [0, n); blocks until done.
  // grain: the smallest chunk worth handing to a thread.
  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t, int64_t, int)>& fn);

  // The pool of the code that is given none, started at its first use with the count
  // set_global_threads gave, else one thread per core.
  static ThreadPool& global();
  // The global pool's count (0: every core), set by a program's main before the pool's first
  // use, from --threads or EngineOptions::threads (MINFER_THREADS). Error beyond kMaxThreads, and
  // once the pool runs with another count.
  static void set_global_threads(int n);

 private:
  void worker(int index);
  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  // A decode step issues hundreds of small parallel loops: workers spin briefly on the
  // generation counter before sleeping, since a futex wake-up costs more than a small matmul.
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0, job_chunk_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace minfer
