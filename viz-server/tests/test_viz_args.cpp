// minfer-viz flag parsing: good flags, bad ports and directories, and the real binary's exit.
#include <sys/wait.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "core/error.h"
#include "viz_args.h"
#include "viz_test_support.h"

namespace minfer::viz::test {
namespace {

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse_viz_args(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VizArgs, ParsesEveryFlagAndRepeatsTraces) {
  TempDir a("args-a"), b("args-b"), web("args-web");
  VizArgs args = parse_viz_args({"--host", "0.0.0.0", "--port", "9123", "--traces",
                                 a.path().string(), "--traces", b.path().string(), "--web",
                                 web.path().string()});
  EXPECT_EQ(args.host, "0.0.0.0");
  EXPECT_EQ(args.port, 9123);
  ASSERT_EQ(args.traces_dirs.size(), 2u);
  EXPECT_EQ(args.traces_dirs[0], a.path().string());
  EXPECT_EQ(args.traces_dirs[1], b.path().string());
  EXPECT_EQ(args.web_dir, web.path().string());
}

TEST(VizArgs, DefaultsToLoopbackAndPort8080) {
  TempDir a("args-def");
  VizArgs args = parse_viz_args({"--traces", a.path().string()});
  EXPECT_EQ(args.host, "127.0.0.1");
  EXPECT_EQ(args.port, 8080);
  EXPECT_FALSE(args.help);
}

TEST(VizArgs, BadPortsNameTheFlagAndTheValue) {
  TempDir a("args-port");
  for (const std::string& bad : std::vector<std::string>{"abc", "-1", "65536", "80x", "", "99999999999"}) {
    std::string msg = error_of({"--port", bad, "--traces", a.path().string()});
    EXPECT_NE(msg.find("--port"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find("'" + bad + "'"), std::string::npos) << msg;
    // The message of every number set by flag or environment (engine/core/parse_number.h).
    EXPECT_NE(msg.find("expected an integer from 0 to 65535"), std::string::npos) << msg;
  }
  EXPECT_EQ(parse_viz_args({"--port", "0", "--traces", a.path().string()}).port, 0);
  EXPECT_EQ(parse_viz_args({"--port", "65535", "--traces", a.path().string()}).port, 65535);
}

TEST(VizArgs, MaxStepsIsACheckedCount) {
  TempDir a("args-steps");
  EXPECT_EQ(parse_viz_args({"--traces", a.path().string()}).max_steps, kDefaultMaxSteps);
  EXPECT_EQ(parse_viz_args({"--max-steps", "1000000", "--traces", a.path().string()}).max_steps, 1000000u);
  for (const std::string& bad : std::vector<std::string>{"0", "-5", "1e6", "x", "99999999999"}) {
    std::string msg = error_of({"--max-steps", bad, "--traces", a.path().string()});
    EXPECT_NE(msg.find("--max-steps"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find("'" + bad + "'"), std::string::npos) << msg;
  }
}

TEST(VizArgs, MissingValuesUnknownFlagsAndMissingDirsAreErrors) {
  EXPECT_NE(error_of({"--port"}).find("needs a value"), std::string::npos);
  EXPECT_NE(error_of({"--bogus"}).find("unknown argument '--bogus'"), std::string::npos);
  std::string msg = error_of({"--traces", "/nonexistent/minfer-viz-dir"});
  EXPECT_NE(msg.find("/nonexistent/minfer-viz-dir: not a directory"), std::string::npos) << msg;
  TempDir a("args-web");
  msg = error_of({"--traces", a.path().string(), "--web", "/nonexistent/web"});
  EXPECT_NE(msg.find("--web /nonexistent/web"), std::string::npos) << msg;
}

// The binary itself: a bad port is a clear message on stderr and a non-zero exit status.
TEST(VizArgs, BinaryExitsNonZeroWithMessageOnBadPort) {
  TempDir a("args-bin");
  std::string cmd = std::string(MINFER_VIZ_EXE) + " --port notaport --traces " +
                    a.path().string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(out.find("--port: expected an integer from 0 to 65535, got 'notaport'"), std::string::npos) << out;
}

// And a good start: it prints the URL it serves, then answers /api/health.
TEST(VizArgs, BinaryPrintsServingUrl) {
  TempDir a("args-run");
  std::string cmd = std::string(MINFER_VIZ_EXE) + " --port 0 --traces " + a.path().string() +
                    " 2>&1 & echo $! ; wait";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[512];
  ASSERT_NE(std::fgets(line, sizeof line, p), nullptr);
  int pid = std::atoi(line);
  ASSERT_GT(pid, 0);
  std::string url;
  while (std::fgets(line, sizeof line, p)) {
    std::string s = line;
    if (s.rfind("minfer-viz: serving http://127.0.0.1:", 0) == 0) {
      url = s;
      break;
    }
  }
  ASSERT_FALSE(url.empty());
  int port = std::atoi(url.c_str() + std::string("minfer-viz: serving http://127.0.0.1:").size());
  ASSERT_GT(port, 0);
  RawResponse health = raw_get(port, "/api/health");
  EXPECT_EQ(health.status, 200) << health.head;
  EXPECT_TRUE(json::parse(health.body)["ok"].get<bool>());
  ::kill(pid, SIGTERM);
  int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status));
}

}  // namespace
}  // namespace minfer::viz::test
