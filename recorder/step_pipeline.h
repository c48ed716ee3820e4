// Formats trace steps on worker threads and writes them in order on one writer thread, so a
// fast run (a CUDA decode step takes ~1 ms) does not wait for the text of its steps. One step
// is formatted in several parts at once (formatting a whole decode step on one thread takes
// ~2-5 ms): workers take the parts of the earliest job first, so a step is ready about N
// workers times sooner, and the writer writes the parts in order once all are done.
// Workers take parts through an atomic counter, not the queue's lock: a decode step has ~60
// parts every ~0.8 ms, and a lock taken per part made the workers wait on each other.
// submit() blocks while `max_pending` jobs are unwritten; drain() waits for all of them and
// idle() asks without waiting (the recorder's flush and caught_up before a token is shown);
// written() counts the jobs written, wait_written() waits for a count (the recorder's journal
// starts over once the file holds every earlier job).
// With 0 workers every job runs at once on the caller's thread (the CPU backend: its own
// threads use every core). A part or write that throws stops the pipeline; the error is
// rethrown by the next submit(), drain() or idle().
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace minfer::trace {

class StepPipeline {
 public:
  using Format = std::function<std::string()>;  // one part; runs on a worker
  // Runs on the writer, in submission order, with the job's parts' texts in their order (the
  // writer joins nothing itself: a step's ~0.5 MB are written from where they were formatted).
  using Write = std::function<void(std::vector<std::string>& texts)>;

  StepPipeline(int workers, int max_pending);
  ~StepPipeline();  // drains what was submitted; errors are dropped (call drain() to see them)
  StepPipeline(const StepPipeline&) = delete;
  StepPipeline& operator=(const StepPipeline&) = delete;

  // write gets the parts' texts in the order given.
  void submit(std::vector<Format> parts, Write write);
  void submit(Format format, Write write);
  // Waits until every submitted job was written; rethrows the first error.
  void drain();
  // Whether every submitted job was written; never waits. Rethrows the first error.
  bool idle();
  // How many jobs were written, in submission order (an inline pipeline: every one submitted).
  int64_t written() const { return written_.load(std::memory_order_acquire); }
  // Waits until `n` jobs were written; rethrows the first error (after which none is).
  void wait_written(int64_t n);

 private:
  struct Job {
    std::vector<Format> parts;
    std::vector<std::string> texts;  // one per part
    Write write;
    std::atomic<size_t> taken{0};      // parts handed to workers (may run past the count)
    std::atomic<size_t> formatted{0};  // parts finished
    bool has_untaken() const { return taken.load(std::memory_order_relaxed) < parts.size(); }
    bool ready() const { return formatted.load(std::memory_order_acquire) == parts.size(); }
  };
  void work();
  void write_loop();
  void format_parts(Job& job);
  void set_error(std::exception_ptr e);

  const int max_pending_;
  std::mutex m_;
  std::condition_variable work_cv_;   // workers: a job with parts to take, or stop
  std::condition_variable write_cv_;  // the writer: the front job is ready, or stop
  std::condition_variable done_cv_;   // submit() and drain(): a job was written, or an error
  // Shared with the workers formatting its parts, so a worker that finds no part left never
  // touches a job the writer has already dropped.
  std::deque<std::shared_ptr<Job>> jobs_;  // front: the next to write
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};  // error_ is set: nothing more is formatted or written
  std::atomic<int64_t> written_{0};  // jobs written without an error
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace minfer::trace
