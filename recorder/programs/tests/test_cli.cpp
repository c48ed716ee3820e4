// End-to-end tests of the command-line tools (minfer, minfer-trace, minfer-bench) on a generated
// tiny model: errors and exit codes, tokenize, --dump-graph, trace recording, the kill -9 test,
// the comparison of the MMQ and float prefill paths, and the bench's report.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "test_models.h"

namespace fs = std::filesystem;
using minfer::GenWeights;

namespace {

const std::string kBin = std::string(MINFER_BINARY_DIR) + "/bin/";

struct CmdResult {
  int code;
  std::string out, err;
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::path(MINFER_BINARY_DIR) / "test-cli" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs a shell command line; captures stdout and stderr.
CmdResult sh(const std::string& cmd, const fs::path& dir) {
  const std::string o = (dir / "stdout").string(), e = (dir / "stderr").string();
  int rc = std::system((cmd + " >" + o + " 2>" + e).c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(o), slurp(e)};
}

std::string tiny() { return minfer::testing::generated_model("cli-tiny", "tiny", GenWeights::Q8_0); }

}  // namespace

TEST(Cli, BadArgumentsGiveClearErrors) {
  auto d = scratch("args");
  CmdResult r = sh(kBin + "minfer", d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing MODEL"), std::string::npos) << r.err;
  r = sh(kBin + "minfer x.gguf hi --bogus", d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos) << r.err;
  r = sh(kBin + "minfer x.gguf hi -n abc", d);
  EXPECT_NE(r.err.find("-n: expected an integer"), std::string::npos) << r.err;
  r = sh(kBin + "minfer " + (d / "missing.gguf").string() + " hi", d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing.gguf"), std::string::npos) << r.err;
}

// Every number a user sets, by flag or environment variable, is checked in one place
// (core/parse_number.h): out of range or not a number is a clear error naming the variable or
// flag and the range, and exit 1, at once. The address-space cap only guards this machine
// should a program start 100000 threads again (it would fail to, instead of taking it down).
TEST(Cli, NumbersFromTheEnvironmentAndFlagsAreChecked) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("numbers");
  const auto run = [&](const std::string& cmd) {
    const auto t0 = std::chrono::steady_clock::now();
    CmdResult r = sh("(ulimit -v 8388608; timeout 60 " + cmd + ")", d);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 20.0) << cmd << ": took " << s << " s";
    return r;
  };
  const auto expect_error = [&](const std::string& cmd, const std::string& message) {
    CmdResult r = run(cmd);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << cmd << "\n" << r.err;
  };
  const std::string minfer = kBin + "minfer " + p + " hi -n 2 --quiet";
  for (const std::string v : {"100000", "0", "abc", "-3", "4x", " 8"})
    expect_error("env 'MINFER_THREADS=" + v + "' " + minfer,
                 "MINFER_THREADS: expected an integer from 1 to 1024, got '" + v + "'");
  expect_error("env MINFER_THREADS=100000 " + kBin + "minfer-gen --preset tiny --weights q8_0 -o " + (d / "x.gguf").string(),
               "MINFER_THREADS: expected an integer from 1 to 1024, got '100000'");
  expect_error("env MINFER_THREADS=100000 " + kBin + "minfer-bench " + p + " -p 4 -n 2 -r 1",
               "MINFER_THREADS: expected an integer from 1 to 1024, got '100000'");
  // The flag wins over the variable, and is checked the same way.
  CmdResult ok = run("env MINFER_THREADS=abc " + minfer + " --threads 2");
  EXPECT_EQ(ok.code, 0) << ok.err;
  expect_error(minfer + " --threads 100000", "--threads: expected an integer from 1 to 1024, got '100000'");
  expect_error(kBin + "minfer-bench " + p + " --threads 100000", "--threads: expected an integer from 1 to 1024, got '100000'");
  expect_error(kBin + "minfer-bench " + p + " -p abc", "-p: expected an integer from 1 to 1048576, got 'abc'");
  expect_error(kBin + "minfer-gen --preset tiny --weights q8_0 --threads 0 -o x.gguf",
               "--threads: expected an integer from 1 to 1024, got '0'");
  expect_error(minfer + " -n 2000000", "-n: expected an integer from 0 to 1048576, got '2000000'");
  expect_error(minfer + " --temp nan", "--temp: expected a number from 0 to 100, got 'nan'");
  expect_error(minfer + " --top-p 2", "--top-p: expected a number from 0 to 1, got '2'");
  expect_error(minfer + " --seed -1", "--seed: expected an integer from 0 to");
  expect_error("env MINFER_TRACE=" + (d / "t.json").string() + " MINFER_TRACE_BINS=abc " + minfer,
               "MINFER_TRACE_BINS: expected an integer from 0 to 4096, got 'abc'");
  expect_error(minfer + " --trace " + (d / "t.json").string() + " --trace-topk 1e3",
               "--trace-topk: expected an integer from 0 to 100000, got '1e3'");
  expect_error("env MINFER_TRACE_MAX_BYTES=-5 " + kBin + "minfer-trace summary " + (d / "none.json").string(),
               "MINFER_TRACE_MAX_BYTES: expected a size in bytes");
}

TEST(Cli, CorruptModelNamesTheFile) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("corrupt");
  std::string bytes = slurp(p);
  std::ofstream(d / "cut.gguf", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  CmdResult r = sh(kBin + "minfer " + (d / "cut.gguf").string() + " hi", d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cut.gguf"), std::string::npos) << r.err;
}

TEST(Cli, TokenizePrintsIds) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("tok");
  CmdResult r = sh(kBin + "minfer tokenize " + p + " 'Hello world'", d);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json({9707, 1879}));
}

TEST(Cli, PromptLongerThanContextIsAnError) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("ctx");
  std::ofstream f(d / "long.txt");
  for (int i = 0; i < 5000; ++i) f << " word" << i % 10;
  f.close();
  CmdResult r = sh(kBin + "minfer " + p + " --file " + (d / "long.txt").string() + " -n 1", d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
}

TEST(Cli, GenerateAndDumpGraph) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("gen");
  CmdResult r = sh(kBin + "minfer " + p + " 'Hello' -n 8 --dump-graph " + (d / "g.json").string(), d);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("decode:"), std::string::npos);
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos);
  auto g = nlohmann::json::parse(slurp((d / "g.json").string()));
  ASSERT_TRUE(g.contains("nodes"));
  bool fused = false;
  for (auto& n : g["nodes"]) {
    for (const char* k : {"id", "name", "op", "shape", "dtype", "src", "layer", "weight", "weight_type", "fused_from"})
      EXPECT_TRUE(n.contains(k)) << k;
    if (!n["fused_from"].empty()) fused = true;
  }
  EXPECT_TRUE(fused);
  EXPECT_TRUE(fs::directory_iterator(d) != fs::directory_iterator());
  // No trace asked for: nothing but our own files appears.
  for (auto& e : fs::directory_iterator(d))
    EXPECT_TRUE(e.path().filename() == "g.json" || e.path().filename() == "stdout" || e.path().filename() == "stderr") << e.path();
}

TEST(Cli, TraceIsRecordedAndValidates) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("trace");
  const std::string t = (d / "t.json").string();
  CmdResult r = sh("MINFER_TRACE=" + t + " " + kBin + "minfer " + p + " 'Hello there' -n 6 --quiet", d);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(fs::exists(t));
  EXPECT_FALSE(fs::exists(t + ".partial"));
  auto j = nlohmann::json::parse(slurp(t));
  EXPECT_EQ(j["format"], "minfer-trace");
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["steps"].size(), 6u);  // prefill + 5 decode steps for 6 tokens
  r = sh(kBin + "minfer-trace validate " + t, d);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// A switch takes no value: the prompt after it stays the prompt, and the trace says so.
TEST(Cli, TraceStepByStepIsASwitch) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("step-by-step");
  const std::string t = (d / "t.json").string();
  CmdResult r = sh(kBin + "minfer " + p + " --trace " + t + " --trace-step-by-step 'Hello there' -n 3 --quiet", d);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(slurp(t));
  EXPECT_EQ(j["meta"]["options"]["step_by_step"], true);
  EXPECT_EQ(j["meta"]["prompt"], "Hello there");
  EXPECT_EQ(j["steps"].size(), 3u);
  r = sh(kBin + "minfer-trace validate " + t, d);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

TEST(Cli, KillDuringRecordingLeavesAReadableTrace) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("kill");
  const std::string t = (d / "k.json").string(), partial = t + ".partial";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("MINFER_TRACE", t.c_str(), 1);
    freopen("/dev/null", "w", stdout);
    execl((kBin + "minfer").c_str(), "minfer", p.c_str(), "Once upon a time", "-n", "3000", "--quiet",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until a few decode steps are on disk, then kill -9 mid-run.
  bool ready = false;
  for (int i = 0; i < 600 && !ready; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto j = nlohmann::json::parse(slurp(partial), nullptr, false);
    ready = !j.is_discarded() && j.contains("steps") && j["steps"].size() >= 3;
  }
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(ready) << "the partial trace never held 3 steps";
  ASSERT_TRUE(WIFSIGNALED(st)) << "minfer finished before it was killed; make the run longer";
  EXPECT_FALSE(fs::exists(t));
  auto j = nlohmann::json::parse(slurp(partial), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "partial trace is not valid JSON after kill -9";
  EXPECT_EQ(j["complete"], false);
  EXPECT_GE(j["steps"].size(), 3u);
  CmdResult r = sh(kBin + "minfer-trace validate " + partial, d);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// Two runs recording the same trace at once: the second is refused at the start, naming the
// file; the first one's file is its own (its prompt), never written into by the second. A run
// killed leaves a .partial nobody holds, which the next run of that path takes over.
TEST(Cli, ASecondRunRecordingTheSameTraceIsRefused) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("two-writers");
  const std::string t = (d / "t.json").string(), partial = t + ".partial";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    execl((kBin + "minfer").c_str(), "minfer", p.c_str(), "Once upon a time", "-n", "3000", "--quiet", "--trace",
          t.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  bool ready = false;
  for (int i = 0; i < 600 && !ready; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto j = nlohmann::json::parse(slurp(partial), nullptr, false);
    ready = !j.is_discarded() && j.contains("steps") && j["steps"].size() >= 2;
  }
  CmdResult second = sh(kBin + "minfer " + p + " 'Another prompt' -n 4 --quiet --trace " + t, d);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(ready) << "the first run's partial trace never held 2 steps";
  ASSERT_TRUE(WIFSIGNALED(st)) << "the first run finished before the second started; make it longer";
  EXPECT_EQ(second.code, 1) << second.err;
  EXPECT_NE(second.err.find(partial + ": another writer holds it"), std::string::npos) << second.err;
  EXPECT_FALSE(fs::exists(t));
  auto j = nlohmann::json::parse(slurp(partial), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "the first run's partial trace is not valid JSON";
  EXPECT_EQ(j["meta"]["prompt"], "Once upon a time");
  EXPECT_GE(j["steps"].size(), 2u);

  CmdResult third = sh(kBin + "minfer " + p + " 'Another prompt' -n 4 --quiet --trace " + t, d);
  ASSERT_EQ(third.code, 0) << third.err;
  j = nlohmann::json::parse(slurp(t));
  EXPECT_EQ(j["meta"]["prompt"], "Another prompt");
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["steps"].size(), 4u);
  EXPECT_FALSE(fs::exists(partial));
}

TEST(Cli, DiffOfMmqAndFloatPaths) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("diff");
  const std::string a = (d / "mmq.json").string(), b = (d / "f32.json").string();
  const std::string prompt = " 'The quick brown fox jumps over the lazy dog' -n 4 --quiet";
  ASSERT_EQ(sh("MINFER_TRACE=" + a + " " + kBin + "minfer " + p + prompt, d).code, 0);
  ASSERT_EQ(sh("MINFER_MMQ=0 MINFER_TRACE=" + b + " " + kBin + "minfer " + p + prompt, d).code, 0);
  CmdResult r = sh(kBin + "minfer-trace diff " + a + " " + b + " --json", d);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["a"]["matmul_path"], "mmq");
  EXPECT_EQ(j["b"]["matmul_path"], "f32");  // the CPU float path computes in f32
  ASSERT_FALSE(j["steps"].empty());
  // The paths differ only by the 8-bit activation rounding: a first matmul departs, bounded.
  bool any_matmul_differs = false;
  for (auto& n : j["steps"][0]["nodes"])
    if (n["op"] == "matmul" && n["sqnr_db"].is_number() && n["sqnr_db"].get<double>() < 200) any_matmul_differs = true;
  EXPECT_TRUE(any_matmul_differs);
  // A different model is refused.
  auto other = minfer::testing::generated_model("cli-tiny-other", "tiny", GenWeights::Q8_0, 2);
  const std::string c = (d / "other.json").string();
  ASSERT_EQ(sh("MINFER_TRACE=" + c + " " + kBin + "minfer " + other + prompt, d).code, 0);
  r = sh(kBin + "minfer-trace diff " + a + " " + c, d);
  EXPECT_NE(r.code, 0);
  EXPECT_NE((r.out + r.err).find("model"), std::string::npos) << r.out << r.err;
}

TEST(Cli, TraceFlagsSelectNodesAndGrid) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("flags");
  const std::string t = (d / "f.json").string();
  CmdResult r = sh(kBin + "minfer " + p + " 'Hello there' -n 3 --quiet --trace " + t +
                   " --trace-nodes 'blk.0.attn_*' --trace-grid=4x16 --trace-topk 5", d);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(slurp(t));
  EXPECT_EQ(j["meta"]["options"]["grid_cols"], 16);
  EXPECT_EQ(j["steps"][0]["logits"]["top"].size(), 5u);
  std::map<int, std::string> names;
  for (auto& n : j["graphs"][0]["nodes"]) names[n["id"].get<int>()] = n["name"];
  size_t with_stats = 0;
  for (auto& n : j["steps"][0]["nodes"]) {
    if (!n.contains("stats")) continue;
    ++with_stats;
    EXPECT_EQ(names[n["id"].get<int>()].rfind("blk.0.attn_", 0), 0u) << names[n["id"].get<int>()];
    EXPECT_LE(n["grid"]["cols"].get<int>(), 16);
    EXPECT_LE(n["grid"]["rows"].get<int>(), 4);
  }
  EXPECT_GT(with_stats, 0u);
  r = sh(kBin + "minfer " + p + " hi --trace-bogus 1", d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--trace-bogus"), std::string::npos) << r.err;
}

namespace {
// The sample traces' prompt and options (scripts/make-sample-traces.sh), as arguments: the
// prompt goes through a file (sh has no $'...' quoting for its newlines).
std::string sky_prompt(const fs::path& dir) {
  const fs::path f = dir / "prompt.txt";
  std::ofstream(f) << "<|im_start|>user\nWhy is the sky blue? Explain briefly.<|im_end|>\n<|im_start|>assistant\n";
  return " --file " + f.string() + " -n 24 --repeat-penalty 1.3 --quiet --backend cpu";
}
}  // namespace

// Two traces recorded separately, the second teacher-forced with the first's tokens, see the
// same input tokens on every step; without forcing the greedy paths part (so the forcing is
// what keeps them aligned).
TEST(Cli, TeacherForcedPairHasInputsAgreeOnEveryStep) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("tokens-from");
  const std::string a = (d / "a.json").string(), b = (d / "b.json.gz").string(), c = (d / "c.json").string();
  const std::string sky = sky_prompt(d);
  ASSERT_EQ(sh("MINFER_TRACE=" + a + " " + kBin + "minfer " + p + sky, d).code, 0);
  // No PROMPT: the trace's prompt; -n above A's count: stops at the end of A's tokens.
  CmdResult r = sh("MINFER_MMQ=0 " + kBin + "minfer " + p + " -n 40 --quiet --backend cpu --repeat-penalty 1.3 --trace " +
                   b + " --tokens-from " + a, d);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("stopped there"), std::string::npos) << r.err;
  ASSERT_EQ(sh("MINFER_MMQ=0 MINFER_TRACE=" + c + " " + kBin + "minfer " + p + sky, d).code, 0);

  auto diff_of = [&](const std::string& x, const std::string& y) {
    CmdResult dr = sh(kBin + "minfer-trace diff " + x + " " + y + " --json", d);
    EXPECT_EQ(dr.code, 0) << dr.err;
    return nlohmann::json::parse(dr.out);
  };
  const auto forced = diff_of(a, b);
  const auto ta = nlohmann::json::parse(slurp(a));
  ASSERT_EQ(forced["steps"].size(), ta["steps"].size());
  EXPECT_EQ(forced["b"]["steps"], ta["steps"].size());  // exactly A's steps, not 40
  EXPECT_EQ(forced["metrics_source"], "grid");
  for (const auto& s : forced["steps"]) EXPECT_EQ(s["inputs_agree"], true) << "step " << s["index"];
  CmdResult v = sh(kBin + "minfer-trace validate " + b, d);
  EXPECT_EQ(v.code, 0) << v.out << v.err;

  const auto free_run = diff_of(a, c);
  bool parted = false;
  for (const auto& s : free_run["steps"]) parted = parted || s["inputs_agree"] == false;
  EXPECT_TRUE(parted) << "the unforced runs never part: this prompt no longer tests the forcing";
}

TEST(Cli, TokensFromRefusesWhatItCannotReplay) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("tokens-from-errors");
  const std::string a = (d / "a.json").string(), junk = (d / "junk.json").string();
  ASSERT_EQ(sh("MINFER_TRACE=" + a + " " + kBin + "minfer " + p + " 'Hello there' -n 3 --quiet", d).code, 0);
  std::ofstream(junk) << "{\"not\": \"a trace\"}";
  CmdResult r = sh(kBin + "minfer " + p + " --quiet --tokens-from " + junk, d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("junk.json: not a minfer trace"), std::string::npos) << r.err;
  auto other = minfer::testing::generated_model("cli-tiny-other", "tiny", GenWeights::Q8_0, 2);
  r = sh(kBin + "minfer " + other + " --quiet --tokens-from " + a, d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("recorded with another model"), std::string::npos) << r.err;
  r = sh(kBin + "minfer " + p + " 'Goodbye' --quiet --tokens-from " + a, d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("differ from the trace's"), std::string::npos) << r.err;
}

// --compare-path f16 on the CPU records the float path by its real name; the paired trace
// validates, and `minfer-trace diff` with one file names the first node under 30 dB and the
// worst local error from the full tensors.
TEST(Cli, PairedTraceRecordsBothPathsInLockstep) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("paired");
  const std::string t = (d / "t.json").string();
  CmdResult r = sh(kBin + "minfer " + p + sky_prompt(d) + " --trace " + t + " --compare-path f16", d);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("recorded as f32"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(slurp(t));
  EXPECT_EQ(j["meta"]["matmul_path"], "mmq");
  EXPECT_EQ(j["meta"]["compare"]["path"], "f32");
  EXPECT_EQ(j["meta"]["compare"]["local"], true);
  r = sh(kBin + "minfer-trace validate " + t, d);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = sh(kBin + "minfer-trace diff " + t + " --json --threshold 45", d);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto dj = nlohmann::json::parse(r.out);
  EXPECT_EQ(dj["metrics_source"], "full");
  EXPECT_EQ(dj["identical"], false);
  ASSERT_TRUE(dj["first_divergent"].is_object());
  ASSERT_TRUE(dj["worst_local"].is_object());
  EXPECT_EQ(dj["worst_local"]["op"], "matmul");
  EXPECT_LT(dj["worst_local"]["sqnr_db"].get<double>(), 200);
  r = sh(kBin + "minfer-trace diff " + t, d);
  EXPECT_NE(r.out.find("worst local error"), std::string::npos) << r.out;
  // Without a trace the paired run has nowhere to go.
  r = sh(kBin + "minfer " + p + " hi -n 1 --quiet --compare-path f32", d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("give --trace FILE"), std::string::npos) << r.err;
}

// A paired run whose main path is not given takes the path other than the reference (the
// backend's default could be the reference's own); MINFER_MMQ=1 still pairs MMQ with itself.
TEST(Cli, PairedRunWithoutMainPathTakesTheOtherPath) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("paired-other");
  const std::string t = (d / "t.json").string(), u = (d / "u.json").string();
  CmdResult r = sh(kBin + "minfer " + p + " hi -n 2 --quiet --backend cpu --trace " + t + " --compare-path mmq", d);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(slurp(t));
  EXPECT_EQ(j["meta"]["matmul_path"], "f32");
  EXPECT_EQ(j["meta"]["compare"]["path"], "mmq");
  r = sh("MINFER_MMQ=1 " + kBin + "minfer " + p + " hi -n 2 --quiet --backend cpu --trace " + u + " --compare-path mmq", d);
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(slurp(u));
  EXPECT_EQ(j["meta"]["matmul_path"], "mmq");
  EXPECT_EQ(j["meta"]["compare"]["path"], "mmq");
}

namespace {

// A copy of `src` with its own output matrix (the embedding's bytes): untied, as 7B is.
std::string untied_copy(const std::string& src, const fs::path& dir) {
  auto f = minfer::GGUFFile::open(src);
  minfer::GGUFWriter w;
  w.set_alignment(f->alignment());
  for (const auto& [key, v] : f->metadata()) w.set(key, v);
  for (const auto& t : f->tensors()) w.add_tensor(t.name, t.ne, t.type, {t.data, t.data + t.nbytes});
  const auto& e = f->tensor("token_embd.weight");
  w.add_tensor("output.weight", e.ne, e.type, {e.data, e.data + e.nbytes});
  const std::string out = (dir / "untied.gguf").string();
  w.write(out);
  return out;
}

}  // namespace

// Bytes per decode token: every weight once, the embedding whole when tied (it is the LM head)
// and one row when untied; the KV cache at the timed steps' mean context; and the bandwidth and
// floor that follow from them. No kernel records on the cpu: null, with the reason.
TEST(Cli, BenchReportsBytesPerTokenAndBandwidth) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("bench");
  const int depth = 8, tg = 4;
  for (const std::string& m : {p, untied_copy(p, d)}) {
    SCOPED_TRACE(m);
    CmdResult r = sh(kBin + "minfer-bench " + m + " --backend cpu -p 4 -n " + std::to_string(tg) + " -d " +
                         std::to_string(depth) + " -r 1 --json",
                     d);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    auto f = minfer::GGUFFile::open(m);
    const auto& e = f->tensor("token_embd.weight");
    const bool tied = f->find_tensor("output.weight") == nullptr;
    int64_t file_bytes = 0;
    for (const auto& t : f->tensors()) file_bytes += static_cast<int64_t>(t.nbytes);
    const int64_t row = static_cast<int64_t>(e.nbytes) / e.n_rows();
    const auto& mem = j["memory"];
    EXPECT_EQ(mem["weight_bytes_per_token"].get<int64_t>(), tied ? file_bytes : file_bytes - static_cast<int64_t>(e.nbytes) + row);
    const minfer::HParams h = minfer::HParams::from_gguf(*f);
    const double kv = 2.0 * h.n_layer * h.n_embd_kv() * 4 * (depth + (tg + 1) / 2.0);
    EXPECT_DOUBLE_EQ(mem["kv_bytes_per_token"].get<double>(), kv);
    const double bytes = j["bytes_per_token"].get<double>();
    EXPECT_DOUBLE_EQ(bytes, mem["weight_bytes_per_token"].get<double>() + kv);
    if (!tied) {
      EXPECT_LT(bytes, static_cast<double>(file_bytes));
    }
    const double tok_s = j["tg"]["median_tok_s"].get<double>(), bw = mem["read_gb_s"].get<double>();
    ASSERT_GT(tok_s, 0);
    ASSERT_GT(bw, 0);
    EXPECT_NEAR(j["achieved_gb_s"].get<double>(), bytes * tok_s / 1e9, 1e-9 * bytes * tok_s / 1e9);
    EXPECT_NEAR(j["fraction_of_read_bw"].get<double>(), j["achieved_gb_s"].get<double>() / bw, 1e-12);
    EXPECT_NEAR(mem["decode_floor_tok_s"].get<double>(), bw * 1e9 / bytes, 1e-9 * bw * 1e9 / bytes);
    EXPECT_NEAR(mem["tg_fraction_of_floor"].get<double>(), j["fraction_of_read_bw"].get<double>(), 1e-12);
    EXPECT_TRUE(j["kernel_families"].is_null());
    EXPECT_EQ(j["kernel_families_unavailable"], "the backend runs no GPU kernels");
  }
}

// The text report names the bytes, the bandwidth and why there is no kernel table; --trace
// still records the decode runs into a valid trace.
TEST(Cli, BenchTextReportAndTrace) {
  auto p = tiny();
  MINFER_REQUIRE_MODEL(p);
  auto d = scratch("bench-trace");
  const std::string t = (d / "t.json").string();
  CmdResult r = sh(kBin + "minfer-bench " + p + " --backend cpu -p 4 -n 3 -r 1 --trace " + t, d);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("MB/token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s read"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel families: unavailable (the backend runs no GPU kernels)"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(t));
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["steps"].size(), 4u);  // prefill + 3 decode steps
  r = sh(kBin + "minfer-trace validate " + t, d);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}
