// Appends to a pipelined run's journal (step_journal.h) on a thread of its own. Encoding and
// writing a 0.5b decode step costs 0.1-0.3 ms of CPU, a third of what the run thread may spend
// per step before the GPU waits for it (docs/cuda.md); here the run thread only hands the step
// over and goes back to launching. A token is shown once its step is journaled (done(), wait()),
// so a kill still loses no step whose token was shown.
// One job at a time: post() waits while the previous one is unfinished, so at most one ended
// step is unjournaled at any moment. A job that throws stops the thread; the error is rethrown
// by the next post(), done() or wait().
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "step_journal.h"

namespace minfer::trace {

class JournalThread {
 public:
  using Job = std::function<void(StepJournal&)>;

  explicit JournalThread(std::unique_ptr<StepJournal> journal);
  ~JournalThread();  // finishes the posted job; its error is dropped (call wait() to see it)
  JournalThread(const JournalThread&) = delete;
  JournalThread& operator=(const JournalThread&) = delete;

  // Hands a job over; waits while the previous one runs. Rethrows the first error.
  void post(Job job);
  // Whether every posted job ran; never waits. Rethrows the first error.
  bool done();
  // Waits until every posted job ran. Rethrows the first error.
  void wait();
  // The journal, once wait() returned (the thread touches it only inside jobs).
  StepJournal& journal() { return *journal_; }
  // Milliseconds the thread spent in jobs (read after wait()).
  double busy_ms() const { return busy_ms_; }

 private:
  void loop();

  std::unique_ptr<StepJournal> journal_;
  std::mutex m_;
  std::condition_variable cv_;  // a job was posted or finished, or stop
  Job job_;                     // the posted job, empty once it ran
  bool running_ = false;        // job_ was taken and runs
  bool stop_ = false;
  std::exception_ptr error_;
  double busy_ms_ = 0;  // the thread's only
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace minfer::trace
