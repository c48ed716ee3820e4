// The journal of a pipelined run (step_journal.h) and `minfer-trace recover`: a step survives the
// binary round trip byte for byte in its JSON, the journal reads back only its newest records and
// stops at a cut one, and a run killed while its steps wait for the writer is recovered to every
// step it had ended, with the same step records an uninterrupted run writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/error.h"
#include "journal_thread.h"
#include "recorder.h"
#include "format/step_codec.h"
#include "step_journal.h"
#include "format/step_json.h"
#include "synthetic.h"
#include "test_tmp.h"
#include "format/trace_check.h"
#include "trace_file.h"
#include "format/trace_load.h"
#include "trace_recover.h"

using namespace minfer;
using namespace minfer::trace;
using nlohmann::json;
namespace fs = std::filesystem;
using minfer::trace::testing::temp_dir;

namespace {

// Every field set, from a seed; values with NaN, Inf and outliers.
struct Filler {
  std::mt19937_64 rng;
  double num() {
    const int k = static_cast<int>(rng() % 16);
    if (k == 0) return NAN;
    if (k == 1) return -INFINITY;
    if (k == 2) return 3e30;
    return std::normal_distribution<double>(0, 2)(rng);
  }
  int64_t i(int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); }
  TensorSummary summary() {
    TensorSummary t;
    t.stats = {num(), num(), num(), num(), num(), i(1000), i(5), i(5)};
    t.grid.rows = 2;
    t.grid.cols = 3;
    t.grid.row_stride = 1 + i(4);
    t.grid.col_stride = 1 + i(9);
    for (int k = 0; k < 6; ++k) t.grid.values.push_back(static_cast<float>(num()));
    t.hist.lo = num();
    t.hist.hi = num();
    for (int k = 0; k < 4; ++k) t.hist.counts.push_back(i(100));
    t.hist.underflow = i(3);
    t.hist.overflow = i(3);
    return t;
  }
  TensorCompare compare() { return {num(), num(), num(), i(50), num(), i(9), i(9)}; }
  LogitsData logits(bool summarised) {
    LogitsData l;
    l.chosen = static_cast<int32_t>(i(40));
    if (summarised) {
      LogitsSummary s = summarize_logits(nullptr, 0, -1, 0);
      s.n_vocab = 40;
      s.nonfinite = i(3);
      for (int k = 0; k < 5; ++k) s.top.push_back({static_cast<int32_t>(i(40)), num(), static_cast<float>(num())});
      s.entropy = num();
      s.chosen = l.chosen;
      s.chosen_rank = i(40);
      s.chosen_p = num();
      l.summary = s;
      l.has_sampled = l.sampled_is_raw = true;
      return l;
    }
    for (int k = 0; k < 40; ++k) l.logits.push_back(static_cast<float>(std::normal_distribution<double>(0, 3)(rng)));
    for (int k = 0; k < 40; ++k) l.sampled.push_back(l.logits[static_cast<size_t>(k)] - 0.5f * static_cast<float>(k % 3));
    l.temperature = 0.7f;
    l.repeat_penalty = 1.1f;
    l.has_sampled = true;
    return l;
  }
  StepData step(bool summarised) {
    StepData d;
    d.info.phase = Phase::Decode;
    d.info.step = 7;
    d.info.pos0 = 41;
    d.info.tokens = {5, 11, 0};
    d.seconds = 1.25e-3;
    d.graph_id = "decode \"2\"";
    d.start_ms = 123.456;
    d.selected = true;
    for (int id = 0; id < 6; ++id) {
      NodeData n;
      n.id = id;
      n.rows = 2;
      n.cols = 64;
      n.time = {1e-5 * id, id % 2 ? -1 : 2e-6};
      if (id == 4) {
        n.no_output = kNoOutputReasons[id % 4];
      } else {
        n.summary = summary();
        if (id % 2 == 0) {
          n.ref = summary();
          n.full = compare();
          if (id == 2) n.local = compare();
          n.ref_present = true;
        }
        for (int k = 0; k < 3; ++k) n.outliers.push_back({i(128), static_cast<float>(num()), static_cast<float>(num())});
        if (id == 1) n.act_scales = BlockScales{num(), num(), num(), i(9), 32};
      }
      d.nodes.push_back(n);
    }
    d.logits = logits(summarised);
    if (!summarised) d.ref_logits = logits(false);
    KernelRecord k;
    k.name = "mmvq<Q4_0, \"x\">";
    k.node = 3;
    k.covers = {2, 3};
    k.graph_node = 77;
    k.start_ns = 1000;
    k.duration_ns = 2500;
    k.grid = {4, 1, 1};
    k.block = {128, 1, 1};
    k.registers = 40;
    k.shared_bytes = 49152;
    d.gpu.kernels = {k, KernelRecord{"summary", -1, "recorder: node and logits summaries", {}, -1, 4000, 100}};
    d.gpu.gpu_ms = 0.8;
    d.gpu.busy_ms = 0.7;
    d.gpu.event_ms = 0.81;
    d.gpu.host_ms = 0.05;
    d.gpu.dropped = 2;
    d.gpu.note = "";
    d.node_gpu = node_gpu_times(d.gpu.kernels, 6);
    return d;
  }
};

std::string vocab_text(int32_t id) { return id == 11 ? "," : "t\"" + std::to_string(id); }

StepFormatter formatter() { return StepFormatter(StepFormat{SummarySpec{}, 5, 3}, vocab_text); }

}  // namespace

TEST(StepCodec, EveryFieldSurvivesTheRoundTrip) {
  for (bool summarised : {false, true}) {
    Filler f{std::mt19937_64(summarised ? 3 : 4)};
    const StepData d = f.step(summarised);
    std::vector<char> buf(3);  // grown on the way
    const std::string bytes(encode_step(d, buf));
    const StepData back = decode_step(bytes.data(), bytes.size(), "test");
    EXPECT_EQ(formatter().text(back), formatter().text(d));
    EXPECT_EQ(std::string(encode_step(back, buf)), bytes) << "a field was lost or changed on the way back";
  }
}

TEST(StepCodec, CutOrCorruptBytesAreAnErrorNotACrash) {
  Filler f{std::mt19937_64(5)};
  std::vector<char> buf;
  std::string bytes(encode_step(f.step(false), buf));
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 16)
    EXPECT_THROW(decode_step(bytes.data(), n, "cut"), Error) << "cut at " << n;
  std::mt19937_64 rng(6);
  int decoded = 0;
  for (int k = 0; k < 2000; ++k) {
    std::string bad = bytes;
    bad[rng() % bad.size()] = static_cast<char>(rng());
    try {
      decode_step(bad.data(), bad.size(), "flipped");
      ++decoded;  // a flipped number is still a step
    } catch (const Error&) {
    }
  }
  EXPECT_GT(decoded, 0);
  bytes.push_back('x');
  EXPECT_THROW(decode_step(bytes.data(), bytes.size(), "longer"), Error);
}

TEST(StepJournal, ReadsBackTheNewestRecordsAndStopsAtACutOne) {
  const std::string dir = temp_dir("journal_records");
  const std::string path = dir + "/t.journal";
  Filler f{std::mt19937_64(7)};
  const StepData a = f.step(true), b = f.step(false);
  const StepFormat fmt{SummarySpec{true, 8, 16, 12}, 7, 2};
  {
    StepJournal j(path, fmt, {"a", "", "\xE4\xBD"});
    j.append_head(0, "{\"head\":1");
    j.append_step(0, a);
    j.append_step(1, b);
    j.start_over();  // the file now holds steps 0 and 1
    j.append_step(2, b);
    j.append_head(3, "{\"head\":2");
    j.append_step(3, a);
  }
  JournalContents c = read_journal(path);
  EXPECT_EQ(c.format, fmt);
  EXPECT_EQ(c.vocab, (std::vector<std::string>{"a", "", "\xE4\xBD"}));
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_FALSE(c.records[0].is_head);
  EXPECT_EQ(c.records[0].ordinal, 2);
  EXPECT_TRUE(c.records[1].is_head);
  EXPECT_EQ(c.records[1].payload, "{\"head\":2");
  EXPECT_EQ(c.records[2].ordinal, 3);
  EXPECT_EQ(formatter().text(decode_step(c.records[2].payload.data(), c.records[2].payload.size(), "r")),
            formatter().text(a));

  // A kill in the middle of the last record: its header is still zero, so it is not read.
  const auto size = fs::file_size(path);
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    std::vector<char> buf;
    const std::string_view rec = encode_step(a, buf);
    io.seekp(static_cast<std::streamoff>(size - rec.size() - 40));
    io.write(std::string(40, '\0').data(), 40);
  }
  c = read_journal(path);
  EXPECT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.stopped, "a record the run had not finished");
  fs::resize_file(path, 12);
  EXPECT_THROW(read_journal(path), Error);
}

namespace {

// The meta of a CUDA run (steps formatted on worker threads), journaled when it gives the
// vocabulary's size (the synthetic prompt's ids are below it).
json cuda_meta(bool journal = true) {
  json meta = synth::meta();
  meta["backend"] = "cuda";
  if (journal) meta["model"]["hparams"]["n_vocab"] = 10000;
  return meta;
}

// A synthetic pipelined (CUDA-like) run whose formatting stalls after the recorder is set up, so
// no step is written: the child records its steps (fewer than the writer's queue holds, so each
// is journaled), waits for the writer as it ends, and dies there as a kill -9 would (_exit: no
// destructor, no flush). Returns the trace's path.
std::string stalled_run(const std::string& dir, int n_decode) {
  const std::string path = dir + "/t.json";
  const pid_t pid = fork();
  if (pid == 0) {
    static std::atomic<bool> stall{false};
    try {
      RecorderOptions o;
      o.path = path;
      Recorder rec(o, cuda_meta(), [](int32_t id) {
        while (stall) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return synth::token_text(id);
      });
      stall = true;
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        _exit(0);
      }).detach();
      synth::Run r;
      r.n_decode = n_decode;
      synth::run(rec, r);
      rec.finish({{"load_ms", 1.0}});  // waits for the stalled writer until the _exit above
    } catch (...) {
      _exit(3);
    }
    _exit(4);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  return path;
}

// The steps of an uninterrupted run of the same synthetic run, CPU-like (inline).
json full_run(const std::string& dir, int n_decode) {
  RecorderOptions o;
  o.path = dir + "/full.json";
  Recorder rec(o, synth::meta(), synth::token_text);
  synth::Run r;
  r.n_decode = n_decode;
  synth::run(rec, r);
  rec.finish({{"load_ms", 1.0}});
  return load_trace(o.path);
}

// A step without its host times (they differ between any two runs).
json timeless(json s) {
  s.erase("start_ms");
  s.erase("time_ms");
  return s;
}

std::string recover_tool(const std::string& file) {
  const std::string cmd = std::string(MINFER_TRACE_TOOL) + " recover " + file + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  const int rc = p ? pclose(p) : -1;
  return std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1) + ": " + out;
}

}  // namespace

// The journal's thread runs its jobs in order, one at a time: done() is false while one runs,
// post() waits for it, and wait() returns once the last one ran.
TEST(JournalThread, RunsJobsInOrderOneAtATime) {
  const std::string dir = temp_dir("journal_thread");
  const StepFormat fmt{SummarySpec{true, 8, 16, 12}, 7, 2};
  JournalThread t(std::make_unique<StepJournal>(dir + "/t.journal", fmt, std::vector<std::string>{"a", "b"}));
  std::atomic<bool> release{false};
  std::vector<int> ran;  // the thread's only until wait() returned
  t.post([&](StepJournal&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ran.push_back(1);
  });
  EXPECT_FALSE(t.done());
  std::atomic<bool> posted{false};
  std::thread poster([&] {
    t.post([&](StepJournal& j) {
      j.append_head(0, "{\"head\":1");
      ran.push_back(2);
    });
    posted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(posted) << "post() returned while the previous job still ran";
  release = true;
  poster.join();
  t.wait();
  EXPECT_TRUE(t.done());
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_GT(t.journal().bytes_written(), 0);
  EXPECT_EQ(read_journal(t.journal().path()).records.size(), 1u);
}

// A job that throws stops the thread: its error comes back from the next call, and no later
// job runs.
TEST(JournalThread, AJobsErrorIsRethrownAndStopsLaterJobs) {
  const std::string dir = temp_dir("journal_thread_error");
  const StepFormat fmt{SummarySpec{true, 8, 16, 12}, 7, 2};
  JournalThread t(std::make_unique<StepJournal>(dir + "/t.journal", fmt, std::vector<std::string>{"a"}));
  t.post([](StepJournal&) { throw Error("disk full (test)"); });
  EXPECT_THROW(t.wait(), Error);
  EXPECT_THROW(t.done(), Error);
  bool later_ran = false;
  EXPECT_THROW(t.post([&](StepJournal&) { later_ran = true; }), Error);
  EXPECT_FALSE(later_ran);
}

TEST(Recover, AKilledPipelinedRunGetsBackEveryStepItEnded) {
  const std::string dir = temp_dir("recover_stalled");
  const std::string path = stalled_run(dir, 5);
  const std::string partial = path + ".partial";
  ASSERT_TRUE(fs::exists(partial + ".journal"));
  EXPECT_EQ(load_trace(partial)["steps"].size(), 0u);  // nothing was formatted

  // Every step and the decode graph's head wait for the writer, all journaled.
  const std::string out = recover_tool(partial);
  EXPECT_EQ(out.substr(0, 3), "0: ") << out;
  EXPECT_NE(out.find("0 whole steps in the file, 6 recovered"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(partial + ".journal"));
  const json t = load_trace(partial);
  EXPECT_EQ(t["complete"], false);
  std::string errs;
  for (const auto& e : validate_trace(t)) errs += e + "\n";
  EXPECT_EQ(errs, "");
  ASSERT_EQ(t["steps"].size(), 6u);
  const json full = full_run(dir, 5);
  EXPECT_EQ(t["graphs"], full["graphs"]);  // the decode graph came from the journal's head
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(timeless(t["steps"][i]), timeless(full["steps"][i])) << "step " << i;

  // Nothing left to do: a clear error, the file untouched.
  const std::string again = recover_tool(path);
  EXPECT_EQ(again.substr(0, 3), "1: ") << again;
  EXPECT_NE(again.find("no trace journal"), std::string::npos) << again;
}

TEST(Recover, AStepCutMidWriteIsTakenFromTheJournal) {
  const std::string dir = temp_dir("recover_cut");
  const std::string path = stalled_run(dir, 5);
  const std::string partial = path + ".partial";
  // What a kill in the middle of writing step 0 over the open tail leaves (trace_file.h), and
  // the remnant of a tail that looks like an object.
  for (const std::string& cut : {std::string("\n{\"index\":0,\"phase\":\"pre"), std::string("\n{\"complete\":false}\n")}) {
    fs::copy_file(partial, partial + ".orig", fs::copy_options::overwrite_existing);
    fs::copy_file(partial + ".journal", partial + ".journal.orig", fs::copy_options::overwrite_existing);
    std::string text;
    {
      std::ifstream in(partial, std::ios::binary);
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string tail = kOpenTail;
    ASSERT_EQ(text.substr(text.size() - tail.size()), tail);
    text.resize(text.size() - tail.size());
    text += cut;
    std::ofstream(partial, std::ios::binary | std::ios::trunc) << text;
    const RecoverResult r = recover_trace(partial);
    EXPECT_EQ(r.steps_in_file, 0u);
    EXPECT_EQ(r.steps_recovered, 6u);
    EXPECT_TRUE(validate_trace(load_trace(partial)).empty());
    fs::rename(partial + ".orig", partial);
    fs::rename(partial + ".journal.orig", partial + ".journal");
  }
}

TEST(Recover, AJournalThatDoesNotReachBackIsAnErrorAndChangesNothing) {
  const std::string dir = temp_dir("recover_gap");
  const std::string path = stalled_run(dir, 5);
  const std::string partial = path + ".partial";
  // Keep the newest head and step 1 only: step 0 is then in neither file. (Earlier heads are
  // there too when the writer had not written them by the time the next record came.)
  JournalContents c = read_journal(partial + ".journal");
  const JournalContents::Record *head = nullptr, *step1 = nullptr;
  for (const auto& rec : c.records) {
    if (rec.is_head) head = &rec;
    else if (rec.ordinal == 1) step1 = &rec;
  }
  ASSERT_TRUE(head && step1);
  {
    StepJournal j(partial + ".journal", c.format, c.vocab);
    j.append_head(head->ordinal, head->payload);
    j.append_step(1, decode_step(step1->payload.data(), step1->payload.size(), "r"));
  }
  const auto before = fs::file_size(partial);
  try {
    recover_trace(partial);
    ADD_FAILURE() << "recovered across a gap";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("starts at step 1 but"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::file_size(partial), before);
  EXPECT_TRUE(fs::exists(partial + ".journal"));
}

TEST(Recover, AFinishedPipelinedRunLeavesNoJournal) {
  const std::string dir = temp_dir("recover_finished");
  RecorderOptions o;
  o.path = dir + "/t.json";
  Recorder rec(o, cuda_meta(), synth::token_text);
  EXPECT_TRUE(fs::exists(o.path + ".partial.journal"));
  synth::Run r;
  r.n_decode = 4;
  synth::run(rec, r);
  rec.finish({{"load_ms", 1.0}});
  EXPECT_FALSE(fs::exists(o.path + ".partial.journal"));
  const json t = load_trace(o.path);
  EXPECT_EQ(t["steps"].size(), 5u);
  EXPECT_GT(t["timings"]["recorder"]["journal_bytes"].get<int64_t>(), 0);
  const json full = full_run(dir, 4);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(timeless(t["steps"][i]), timeless(full["steps"][i])) << "step " << i;
}

TEST(Recover, AfterTheFilesWholeStepsAndOverItsCutLastOne) {
  const std::string dir = temp_dir("recover_after_steps");
  RecorderOptions o;
  o.path = dir + "/t.json";
  {
    Recorder rec(o, cuda_meta(), synth::token_text);
    synth::Run r;
    r.n_decode = 4;
    synth::run(rec, r);
  }  // not finished: every step is written, the journal still holds the newest
  const std::string partial = o.path + ".partial";
  fs::copy_file(partial + ".journal", dir + "/journal.copy");
  RecoverResult r = recover_trace(o.path);  // the trace's path works as well as the .partial's
  EXPECT_EQ(r.steps_in_file, 5u);
  EXPECT_EQ(r.steps_recovered, 0u);

  // A kill 30 bytes into writing step 4: step 4 comes from the journal.
  std::string text;
  {
    std::ifstream in(partial, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text.resize(text.rfind("\n{") + 30);
  std::ofstream(partial, std::ios::binary | std::ios::trunc) << text;
  fs::copy_file(dir + "/journal.copy", partial + ".journal");
  r = recover_trace(partial);
  EXPECT_EQ(r.steps_in_file, 4u);
  EXPECT_EQ(r.steps_recovered, 1u);
  const json t = load_trace(partial);
  EXPECT_TRUE(validate_trace(t).empty());
  const json full = full_run(dir, 4);
  ASSERT_EQ(t["steps"].size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(timeless(t["steps"][i]), timeless(full["steps"][i])) << "step " << i;
}

// While the writer keeps up, every record starts the journal over: it holds about one step, not
// the run (a journal that only started over when the pipeline was idle grew by every step).
TEST(Recover, AJournalStaysAboutOneStepLongWhileTheWriterKeepsUp) {
  const std::string dir = temp_dir("journal_short");
  RecorderOptions o;
  o.path = dir + "/t.json";
  Recorder rec(o, cuda_meta(), synth::token_text);
  synth::Run r;
  r.n_decode = 30;
  r.after_step = [](int) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };  // a GPU step's pace
  synth::run(rec, r);
  rec.flush();
  const std::string journal = o.path + ".partial.journal";
  const JournalContents c = read_journal(journal);
  ASSERT_FALSE(c.records.empty());
  EXPECT_LE(c.records.size(), 2u) << "the journal did not start over";
  EXPECT_EQ(c.records.back().ordinal, 30);  // the last step (the file's step 30)
  rec.finish({{"load_ms", 1.0}});
  EXPECT_FALSE(fs::exists(journal));
}

// A writer that stays behind never finds the file holding every earlier record, so the journal
// would grow by every step: past 16 records (recorder.cpp's kMaxJournalRecords) the journal's
// thread waits for the writer and starts over.
TEST(Recover, AJournalStaysBoundedWhileTheWriterLags) {
  const std::string dir = temp_dir("journal_bounded");
  RecorderOptions o;
  o.path = dir + "/t.json";
  static std::atomic<bool> slow{false};
  Recorder rec(o, cuda_meta(), [](int32_t id) {  // a step formats in ~2 ms, the run's pace is 0
    if (slow) std::this_thread::sleep_for(std::chrono::microseconds(100));
    return synth::token_text(id);
  });
  slow = true;
  synth::Run r;
  r.n_decode = 60;
  synth::run(rec, r);
  rec.flush();
  const JournalContents c = read_journal(o.path + ".partial.journal");
  ASSERT_FALSE(c.records.empty());
  EXPECT_LE(c.records.size(), 16u) << "the journal grew with the run";
  EXPECT_EQ(c.records.back().ordinal, 60);
  slow = false;
  rec.finish({{"load_ms", 1.0}});
  EXPECT_EQ(load_trace(o.path)["steps"].size(), 61u);
}

// A step is safe once journaled: the run may show its token while the writer is still behind
// (without a journal only once the step is written).
TEST(Recover, AJournaledStepIsSafeBeforeItIsWritten) {
  for (bool journal : {true, false}) {
    const std::string dir = temp_dir(journal ? "safe_journaled" : "safe_unjournaled");
    static std::atomic<bool> stall{false};
    RecorderOptions o;
    o.path = dir + "/t.json";
    Recorder rec(o, cuda_meta(journal), [](int32_t id) {
      while (stall) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return synth::token_text(id);
    });
    // The writer thread writes the head: the .partial is readable only once it has (a load
    // before that threw, and the recorder's destructor then waited for the stalled writer).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (bool readable = false; !readable;) {
      try {
        load_trace(o.path + ".partial");
        readable = true;
      } catch (const Error&) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the head was never written";
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    stall = true;
    struct Unstall {  // whatever fails below, the writer is let go before the recorder waits for it
      ~Unstall() { stall = false; }
    } unstall;
    synth::Run r;
    r.n_decode = 0;  // the prefill step only
    synth::run(rec, r);
    if (journal) rec.flush();  // waits for the journal's thread, not for the stalled writer
    EXPECT_EQ(rec.caught_up(), journal) << (journal ? "journaled" : "not journaled");
    EXPECT_EQ(load_trace(o.path + ".partial")["steps"].size(), 0u);
    stall = false;
    rec.flush();
    EXPECT_TRUE(rec.caught_up());
    rec.finish({{"load_ms", 1.0}});
    EXPECT_EQ(load_trace(o.path)["steps"].size(), 1u);
  }
}

// Damaged journals (bytes flipped anywhere, cut anywhere): recovery refuses with an Error or
// recovers steps that validate, never crashes (run under ASan+UBSan by run-trace-fuzz.sh).
TEST(Recover, DamagedJournalsAreRefusedOrRecoveredNeverACrash) {
  const std::string dir = temp_dir("recover_damaged");
  const std::string path = stalled_run(dir, 5);
  const std::string partial = path + ".partial", journal = partial + ".journal";
  fs::copy_file(partial, dir + "/partial.orig");
  std::string good;
  {
    std::ifstream in(journal, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::mt19937_64 rng(11);
  int recovered = 0, refused = 0;
  for (int k = 0; k < 300; ++k) {
    std::string bad = good;
    if (k % 4 == 3) {
      bad.resize(rng() % bad.size());
    } else {
      // Flips within the vocabulary are harmless (texts change), so most land past it.
      const size_t from = k % 2 ? 0 : bad.size() / 2;
      for (int f = 0; f < 1 + k % 3; ++f) bad[from + rng() % (bad.size() - from)] ^= static_cast<char>(1 + rng() % 255);
    }
    fs::copy_file(dir + "/partial.orig", partial, fs::copy_options::overwrite_existing);
    std::ofstream(journal, std::ios::binary | std::ios::trunc) << bad;
    try {
      const RecoverResult r = recover_trace(partial);
      ++recovered;
      EXPECT_LE(r.steps_recovered, 6u);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(recovered, 0);
}
