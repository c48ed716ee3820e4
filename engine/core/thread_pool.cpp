#include "core/thread_pool.h"

#include <algorithm>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINFER_CPU_RELAX() _mm_pause()
#else
#define MINFER_CPU_RELAX() std::this_thread::yield()
#endif

namespace minfer {
namespace {
// ~50-300 µs of pause instructions (pause takes 10-140 cycles by CPU): long enough to bridge
// two nodes, short enough not to steal an oversubscribed core for long.
constexpr int kSpinBeforeSleep = 1 << 11;

std::atomic<int> g_global_threads{0};  // set_global_threads
std::atomic<bool> g_global_started{false};

int threads_for(int n) {  // a pool's count for an asked n (<= 0: every core)
  if (n > kMaxThreads) fail("thread pool: asked for ", n, " threads, at most ", kMaxThreads);
  return n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

ThreadPool::ThreadPool(int n) {
  n = threads_for(n);
  n_threads_ = n;
  for (int i = 1; i < n; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinBeforeSleep) {
      MINFER_CPU_RELAX();
      ++spins;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);
      cv_start_.wait(lk, [&] { return generation_.load() != seen; });
      sleepers_.fetch_sub(1);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    for (;;) {
      int64_t b = next_.fetch_add(job_chunk_);
      if (b >= job_n_) break;
      (*job_)(b, std::min(job_n_, b + job_chunk_), index);
    }
    pending_.fetch_sub(1, std::memory_order_release);
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
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = chunk;
  next_.store(0);
  pending_.store(n_threads_ - 1);
  {
    // Publishing under the mutex pairs with the sleepers' predicate check (no lost wake-up).
    std::lock_guard<std::mutex> lk(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load() > 0) cv_start_.notify_all();
  for (;;) {
    int64_t b = next_.fetch_add(chunk);
    if (b >= n) break;
    fn(b, std::min(n, b + chunk), 0);
  }
  int spins = 0;
  while (pending_.load(std::memory_order_acquire) > 0)
    if (++spins < kSpinBeforeSleep) MINFER_CPU_RELAX();
    else std::this_thread::yield();
  job_ = nullptr;
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool((g_global_started = true, g_global_threads.load()));
  return pool;
}

void ThreadPool::set_global_threads(int n) {
  const int want = threads_for(n);
  if (g_global_started && global().size() != want)
    fail("thread pool: the global pool already runs ", global().size(), " threads; asked for ", want);
  g_global_threads = n;
}

}  // namespace minfer
