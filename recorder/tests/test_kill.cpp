// Crash safety: a recording killed with SIGKILL mid-run leaves a .partial that loads, validates,
// says "complete": false and holds every step finished before the kill.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "trace_check.h"
#include "trace_load.h"

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
