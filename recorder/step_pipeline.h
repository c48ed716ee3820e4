// Formats trace steps on worker threads and writes them in order on one writer thread, so a
// fast run (a CUDA decode step takes ~1 ms, formatting its JSON ~2-5 ms) does not wait for the
// text of the previous steps. submit() blocks only while `max_pending` steps are queued; a
// kill -9 then loses at most those steps plus the one in flight. With 0 workers every job runs
// at once on the caller's thread (the CPU backend: its own threads use every core).
// A job that throws stops the pipeline; the error is rethrown by the next submit() or drain().
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace minfer::trace {

class StepPipeline {
 public:
  using Format = std::function<std::string()>;       // runs on a worker
  using Write = std::function<void(std::string&)>;   // runs on the writer, in submission order

  StepPipeline(int workers, int max_pending);
  ~StepPipeline();  // drains what was submitted; errors are dropped (call drain() to see them)
  StepPipeline(const StepPipeline&) = delete;
  StepPipeline& operator=(const StepPipeline&) = delete;

  void submit(Format format, Write write);
  // Waits until every submitted job was written; rethrows the first error.
  void drain();

 private:
  struct Job {
    Format format;
    Write write;
    std::string text;
    bool taken = false, formatted = false;
  };
  void work();
  void write_loop();
  void rethrow_locked();

  const int max_pending_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;  // front: the next to write
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace minfer::trace
