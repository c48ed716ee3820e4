// Crash safety: a recording killed with SIGKILL mid-run leaves a .partial that loads, validates,
// says "complete": false and holds every step finished before the kill; a run that formats its
// steps on worker threads (a CUDA run) loses no step it had made safe (journaled: its token may be
// shown) once `minfer-trace recover` has added the ones its journal holds.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "recorder.h"
#include "synthetic.h"
#include "format/trace_check.h"
#include "format/trace_load.h"
#include "trace_recover.h"

using namespace minfer::trace;
namespace fs = std::filesystem;

TEST(Kill, SigkillMidRunLeavesAValidPartialTrace) {
  const fs::path dir = fs::path(MINFER_BINARY_DIR) / "recorder-test-tmp" / "kill";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "t.json").string(), partial = path + ".partial";

  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(MINFER_KILL_DRIVER, MINFER_KILL_DRIVER, path.c_str(), "200", "150", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until at least two steps are on disk (bounded: 60 s).
  size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      if (fs::exists(partial)) seen = load_trace(partial)["steps"].size();
    } catch (const minfer::Error&) {
      // caught mid-write: try again
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the driver ended before the kill (status " << status << ")";
  ASSERT_GE(seen, 2u) << "the driver never wrote two steps";

  EXPECT_FALSE(fs::exists(path));  // never renamed into place
  LoadInfo li;
  const auto t = load_trace(partial, &li);
  EXPECT_EQ(t["complete"], false);
  EXPECT_GE(t["steps"].size(), 2u);
  std::string errs;
  for (const auto& e : validate_trace(t)) errs += e + "\n";
  EXPECT_EQ(errs, "");
}

TEST(Kill, SigkillOfAPipelinedRunLosesNoSafeStepOnceRecovered) {
  const fs::path dir = fs::path(MINFER_BINARY_DIR) / "recorder-test-tmp" / "kill_pipelined";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "t.json").string(), partial = path + ".partial";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);

  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the run: reports each step whose on_step_end returned, never finishes
    close(fds[0]);
    try {
      RecorderOptions o;
      o.path = path;
      nlohmann::json meta = minfer::synth::meta();
      meta["backend"] = "cuda";  // steps are formatted on worker threads, and journaled
      meta["model"]["hparams"]["n_vocab"] = 10000;
      // Formatting (token texts) far slower than the run: a deeper queue would fill up. Not while
      // the journal's vocabulary is read.
      static std::atomic<bool> slow{false};
      Recorder rec(o, meta, [](int32_t id) {
        if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return minfer::synth::token_text(id);
      });
      slow = true;
      minfer::synth::Run r;
      r.n_decode = 1000;
      r.after_step = [&](int step) {  // the run would show step's token now: it is safe
        if (!rec.caught_up()) rec.flush();
        if (write(fds[1], &step, sizeof step) != sizeof step) _exit(3);
      };
      minfer::synth::run(rec, r);
    } catch (...) {
    }
    _exit(2);
  }
  close(fds[1]);
  // Wait (bounded: 60 s) until step 12 is safe on the run's side (journaled: flush() returned):
  // the writer's queue is full by then.
  int safe = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (safe < 12 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) == 1) {
      int step = -1;
      if (read(fds[0], &step, sizeof step) != sizeof step) break;
      safe = step;
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before the kill (status " << status << ")";
  ASSERT_GE(safe, 12) << "the run never made step 12 safe";

  // on_step_end(k) returns once at most 8 jobs wait for the writer, k's among them (recorder.cpp's
  // kJournaledPending): steps 0..k-8 are in the .partial, the later ones in its journal; only
  // step k+1 (in flight, not safe) is lost.
  constexpr int kQueued = 8;
  EXPECT_GE(load_trace(partial)["steps"].size(), static_cast<size_t>(safe + 1 - kQueued));
  const RecoverResult r = recover_trace(partial);
  const auto t = load_trace(partial);
  EXPECT_EQ(t["steps"].size(), r.steps_in_file + r.steps_recovered);
  EXPECT_EQ(t["complete"], false);
  EXPECT_GE(t["steps"].size(), static_cast<size_t>(safe + 1));
  std::string errs;
  for (const auto& e : validate_trace(t)) errs += e + "\n";
  EXPECT_EQ(errs, "");
}
