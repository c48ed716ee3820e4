// Two writers, one file; and links planted where a trace writer creates its files. A second
// writer of the same trace is told another writer holds it and stops, before it writes anything
// (the first one's run and file stay whole); a symlink named as a file the writer creates (the
// .partial, its journal, the .gz temporary, an output's temporary) is never written through.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.h"
#include "error_of.h"
#include "file_size_limit.h"
#include "output_file.h"
#include "recorder.h"
#include "synthetic.h"
#include "test_tmp.h"
#include "format/trace_check.h"
#include "format/trace_load.h"
#include "trace_recover.h"

using namespace minfer;
using namespace minfer::trace;
namespace fs = std::filesystem;

namespace {

using minfer::trace::testing::error_of;

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string scratch() { return minfer::trace::testing::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }

// A CUDA run's meta: steps formatted on worker threads and journaled (.partial.journal).
nlohmann::json pipelined_meta() {
  nlohmann::json m = synth::meta();
  m["backend"] = "cuda";
  m["model"]["hparams"]["n_vocab"] = 512;
  return m;
}

RecorderOptions at(const std::string& path) {
  RecorderOptions o;
  o.path = path;
  return o;
}

void expect_valid_complete(const std::string& path, size_t steps) {
  const auto t = load_trace(path);
  EXPECT_EQ(t["complete"], true);
  EXPECT_EQ(t["steps"].size(), steps);
  std::string errs;
  for (const auto& e : validate_trace(t)) errs += e + "\n";
  EXPECT_EQ(errs, "");
}

constexpr const char* kPrecious = "precious bytes nobody may overwrite\n";

}  // namespace

class TwoWriters : public ::testing::TestWithParam<bool> {};  // param: a pipelined (journaled) run

TEST_P(TwoWriters, TheSecondRecorderOfAPathIsRefusedAndTheFirstFinishes) {
  const std::string dir = scratch(), path = dir + "/t.json";
  const nlohmann::json meta = GetParam() ? pipelined_meta() : synth::meta();
  Recorder first(at(path), meta, synth::token_text);
  const std::string err = error_of([&] { Recorder second(at(path), meta, synth::token_text); });
  EXPECT_NE(err.find(path + ".partial: another writer holds it"), std::string::npos) << err;
  synth::Run r;
  r.n_decode = 4;
  synth::run(first, r);
  first.finish({{"load_ms", 1.0}});
  expect_valid_complete(path, 5);
  EXPECT_FALSE(fs::exists(path + ".partial"));
  EXPECT_FALSE(fs::exists(path + ".partial.journal"));
}

INSTANTIATE_TEST_SUITE_P(InlineAndPipelined, TwoWriters, ::testing::Bool());

// Two processes: the one that comes second exits 1 naming the file; the first one's trace is
// whole and its own (its step count, not the second one's).
TEST(TwoWriterProcesses, ExactlyOneSucceedsAndTheFileIsItsTrace) {
  const std::string dir = scratch(), path = dir + "/t.json", partial = path + ".partial";
  const pid_t first = fork();
  ASSERT_GE(first, 0);
  if (first == 0) {
    execl(MINFER_KILL_DRIVER, MINFER_KILL_DRIVER, path.c_str(), "8", "150", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Until the first one has a step on disk (bounded: 60 s).
  bool started = false;
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       !started && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      started = fs::exists(partial) && !load_trace(partial)["steps"].empty();
    } catch (const Error&) {
    }
  }
  const std::string err_file = dir + "/second.err";
  const int second = std::system((std::string(MINFER_KILL_DRIVER) + " " + path + " 2 0 > /dev/null 2> " + err_file).c_str());
  int status = 0;
  waitpid(first, &status, 0);
  ASSERT_TRUE(started) << "the first writer never wrote a step";
  ASSERT_TRUE(WIFEXITED(second));
  const std::string err = slurp(err_file);
  EXPECT_EQ(WEXITSTATUS(second), 1) << err;
  EXPECT_NE(err.find(partial + ": another writer holds it"), std::string::npos) << err;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  expect_valid_complete(path, 9);  // the first one's prefill and 8 decode steps
}

// A run killed leaves a .partial nobody holds: the next run of that path replaces it.
TEST(StaleAndLivePartials, AKilledRunsPartialIsTakenOver) {
  const std::string dir = scratch(), path = dir + "/t.json";
  write(path + ".partial", "{\"format\":\"minfer-trace\", cut by a kill");
  write(path + ".partial.journal", "MINFERJ1 cut");
  Recorder rec(at(path), pipelined_meta(), synth::token_text);
  synth::run(rec, synth::Run{});
  rec.finish({{"load_ms", 1.0}});
  expect_valid_complete(path, 4);
}

// Recovery rewrites the .partial: never under a run that is still writing it.
TEST(StaleAndLivePartials, RecoverRefusesAPartialARunIsWriting) {
  const std::string dir = scratch(), path = dir + "/t.json";
  Recorder rec(at(path), pipelined_meta(), synth::token_text);
  synth::run(rec, synth::Run{});
  rec.flush();
  // Had recovery renamed its result over the .partial, the run's writer would find its claim
  // lost and its finish would fail (or the file would not be the run's 4 steps). The inode is no
  // witness: the run's own writer may rebuild its head beside and rename it over (TraceFile).
  const std::string err = error_of([&] { recover_trace(path); });
  EXPECT_NE(err.find(path + ".partial: another writer holds it"), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(path + ".partial.journal")) << "recovery removed the journal of a live run";
  rec.finish({{"load_ms", 1.0}});
  expect_valid_complete(path, 4);
}

TEST(PlantedLinks, ASymlinkAtThePartialIsRefusedAndItsTargetUntouched) {
  const std::string dir = scratch(), path = dir + "/t.json", victim = dir + "/victim.txt";
  write(victim, kPrecious);
  fs::create_symlink(victim, path + ".partial");
  const std::string err = error_of([&] { Recorder rec(at(path), synth::meta(), synth::token_text); });
  EXPECT_NE(err.find(path + ".partial: is a symbolic link"), std::string::npos) << err;
  EXPECT_TRUE(slurp(victim) == kPrecious) << "the link's target was written through";
  EXPECT_TRUE(fs::is_symlink(path + ".partial"));
  EXPECT_FALSE(fs::exists(path));
}

TEST(PlantedLinks, ASymlinkAtTheJournalIsRefusedAndItsTargetUntouched) {
  const std::string dir = scratch(), path = dir + "/t.json", victim = dir + "/victim.txt";
  write(victim, kPrecious);
  fs::create_symlink(victim, path + ".partial.journal");
  const std::string err = error_of([&] { Recorder rec(at(path), pipelined_meta(), synth::token_text); });
  EXPECT_NE(err.find(path + ".partial.journal: is a symbolic link"), std::string::npos) << err;
  EXPECT_TRUE(slurp(victim) == kPrecious) << "the link's target was written through";
}

TEST(PlantedLinks, ASymlinkAtTheGzipTemporaryIsRefusedAndItsTargetUntouched) {
  const std::string dir = scratch(), path = dir + "/t.json.gz", victim = dir + "/victim.txt";
  write(victim, kPrecious);
  fs::create_symlink(victim, path + ".partial.gz.tmp");
  Recorder rec(at(path), synth::meta(), synth::token_text);
  synth::run(rec, synth::Run{});
  const std::string err = error_of([&] { rec.finish({{"load_ms", 1.0}}); });
  EXPECT_NE(err.find(path + ".partial.gz.tmp: is a symbolic link"), std::string::npos) << err;
  EXPECT_TRUE(slurp(victim) == kPrecious) << "the link's target was written through";
  EXPECT_FALSE(fs::exists(path));
}

TEST(PlantedLinks, AnOutputFileIsNeverWrittenThroughALinkAtItsTemporary) {
  const std::string dir = scratch(), out = dir + "/out.json", victim = dir + "/victim.txt";
  write(victim, kPrecious);
  fs::create_symlink(victim, out + ".tmp");
  write_output_file(out, "{\"ok\":true}\n");
  EXPECT_EQ(slurp(out), "{\"ok\":true}\n");
  EXPECT_TRUE(slurp(victim) == kPrecious) << "the link's target was written through";
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out)));
}

// Issue 31, item 9: MINFER_TRACE=/dev/full or a directory failed only after the whole run,
// leaving a temporary .partial the message did not name. The destination is checked when the
// recorder starts, before any step, and nothing is left behind.
TEST(Destinations, ADirectoryOrAFullDeviceIsRefusedBeforeTheRun) {
  const std::string dir = scratch(), target = dir + "/a-dir.json";
  fs::create_directories(target);
  std::string err = error_of([&] { Recorder rec(at(target), synth::meta(), synth::token_text); });
  EXPECT_NE(err.find(target + ": is a directory"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(target + ".partial"));
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  const auto tmp_before = std::distance(fs::directory_iterator(fs::temp_directory_path()), fs::directory_iterator());
  err = error_of([&] { Recorder rec(at("/dev/full"), synth::meta(), synth::token_text); });
  EXPECT_NE(err.find("/dev/full: cannot write"), std::string::npos) << err;
  EXPECT_EQ(std::distance(fs::directory_iterator(fs::temp_directory_path()), fs::directory_iterator()), tmp_before)
      << "a temporary .partial was left";
  // /dev/null stays a valid destination.
  Recorder ok(at("/dev/null"), synth::meta(), synth::token_text);
  synth::run(ok, synth::Run{});
  ok.finish({{"load_ms", 1.0}});
}

// Issue 31, item 9: a recorder that cannot start leaves nothing behind. A CUDA run's recorder
// writes its journal's head (the whole vocabulary) before the run; when that write failed (a
// full disk; here a file size limit), the constructor threw with the .partial and the half
// journal on disk, and its caller had no path to remove them by (the live runs of minfer-viz
// remove a failed run's files by the recorder's partial_path()).
TEST(Destinations, ARecorderThatCannotStartLeavesNoFile) {
  const std::string dir = scratch(), path = dir + "/t.json";
  nlohmann::json meta = pipelined_meta();
  meta["model"]["hparams"]["n_vocab"] = 65536;  // a journal head of ~1.5 MB
  const auto long_text = [](int32_t id) { return "token-text-" + std::to_string(id) + "-padded"; };
  std::string err;
  {
    minfer::testing::FileSizeLimit limit(256 << 10);
    err = error_of([&] { Recorder rec(at(path), meta, long_text); });
  }
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{}) << err;
}
