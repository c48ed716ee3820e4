// Regression tests for the hostile-input defects of issue 12 in the trace tools and the CLI:
// each reproduction from the issue gives a clear error (file, field, problem) and a non-zero
// exit, never a crash, a hang, runaway memory, a replaced device file or a lost write.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "format/checked_trace.h"
#include "core/error.h"
#include "error_of.h"
#include "gguf/gguf_reader.h"
#include "gzip_compress.h"
#include "json_read.h"
#include "mutation_base.h"
#include "output_file.h"
#include "recorder.h"
#include "synthetic.h"
#include "test_tmp.h"
#include "format/trace_input.h"
#include "format/trace_load.h"

using namespace minfer;
using namespace minfer::trace;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

namespace fuzz = minfer::trace::testing;

using minfer::trace::testing::error_of;

struct Exec {
  int code;
  std::string out, err;
};

// Runs a shell command line with its stdout and stderr captured apart.
Exec sh(const std::string& dir, const std::string& cmd, const std::string& stdout_to = "") {
  const std::string out = stdout_to.empty() ? dir + "/stdout.txt" : stdout_to;
  const int rc = std::system(("timeout 60 " + cmd + " > " + out + " 2> " + dir + "/stderr.txt").c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc), stdout_to.empty() ? slurp(out) : "",
          slurp(dir + "/stderr.txt")};
}

const std::string kTool = MINFER_TRACE_TOOL;

std::string gzip_bytes(const std::string& raw) { return minfer::trace::gzip_compress(raw, 9); }

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class Hardening : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fuzz::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    good = fuzz::small_valid_trace(dir + "/recorded.json");
    good_path = dir + "/good.json";
    write(good_path, good.dump());
  }
  std::string dir, good_path;
  json good;
};

// Defect 1: a trace without a field the readers use.
TEST_F(Hardening, MissingFieldsAreNamedNotReadOutsideTheHeap) {
  json t = good;
  for (auto& s : t["steps"]) s.erase("logits");
  const std::string path = dir + "/nologits.json";
  write(path, t.dump());
  EXPECT_NE(error_of([&] { load_checked_trace(path); }).find("nologits.json: not a valid minfer-trace v3: /steps/0: missing required field 'logits'"),
            std::string::npos);
  for (const std::string& args : {"summary " + path, "export-perfetto " + path + " -o " + dir + "/p.json",
                                  "diff " + good_path + " " + path, "diff --json " + path + " " + good_path}) {
    const Exec r = sh(dir, kTool + " " + args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("/steps/0: missing required field 'logits'"), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("unexpected error"), std::string::npos) << r.err;
  }
}

// Defect 2: deep nesting is refused while parsing, before anything recurses over it.
TEST_F(Hardening, DeepNestingIsRefusedNotAStackOverflow) {
  std::string text = good.dump();
  const size_t op = text.find("\"op\":\"");
  ASSERT_NE(op, std::string::npos);
  const size_t end = text.find('"', op + 6);
  text.replace(op, end + 1 - op, "\"op\":" + std::string(100000, '[') + std::string(100000, ']'));
  const std::string path = dir + "/deep.json";
  write(path, text);
  EXPECT_NE(error_of([&] { load_trace(path); }).find("deep.json: not valid JSON (/graphs/0/nodes/0/op/0/0"),
            std::string::npos);
  for (const char* cmd : {"validate", "export-perfetto", "summary"}) {
    const Exec r = sh(dir, kTool + " " + cmd + " " + path);
    EXPECT_EQ(r.code, 1) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("nested deeper than 64 levels"), std::string::npos) << cmd << "\n" << r.err;
  }
}

// Defect 3: the inflated size is capped, and so is the document a small text can make.
TEST_F(Hardening, DecompressionBombsStopAtTheCap) {
  const std::string bomb = dir + "/bomb.json.gz";
  write(bomb, gzip_bytes("[" + std::string(8 << 20, ' ') + "]"));  // 8 MB of JSON text, 8 KB of gzip
  ASSERT_LT(fs::file_size(bomb), 64u << 10);
  ReadOptions small;
  small.max_bytes = 1 << 20;
  EXPECT_NE(error_of([&] { load_trace(bomb, nullptr, small); })
                .find("bomb.json.gz: the JSON text is larger than the limit of 1048576 bytes (inflated size)"),
            std::string::npos);
  Exec r = sh(dir, kTool + " --max-trace-bytes 1M validate " + bomb);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("larger than the limit of 1048576 bytes"), std::string::npos) << r.err;
  r = sh(dir, "env MINFER_TRACE_MAX_BYTES=1M " + kTool + " validate " + bomb);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("larger than the limit of 1048576 bytes"), std::string::npos) << r.err;
  r = sh(dir, kTool + " --max-trace-bytes 1X validate " + bomb);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--max-trace-bytes: expected a size in bytes from 1 to 18446744073709551615, optionally with "
                       "K, M or G (1024, 1024^2, 1024^3), got '1X'"),
            std::string::npos) << r.err;
  // Two bytes of text per value would make a document 8x its text: values are capped too.
  std::string zeros = "[0";
  for (int i = 0; i < 300000; ++i) zeros += ",0";
  write(dir + "/zeros.json", zeros + "]");
  EXPECT_NE(error_of([&] { load_trace(dir + "/zeros.json", nullptr, small); }).find("holds more than 131072 JSON values"),
            std::string::npos);
}

// Defect 4: a device (here reached through a symlink, so a regression cannot replace the real
// /dev/null) is written in place, never renamed over.
TEST_F(Hardening, DeviceTargetsAreWrittenInPlaceNotReplaced) {
  const std::string link = dir + "/null.json";
  fs::create_symlink("/dev/null", link);
  const auto still_device = [&] {
    EXPECT_TRUE(fs::is_symlink(link)) << "the symlink to /dev/null was replaced by a regular file";
    struct stat st {};
    EXPECT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  };
  write_output_file(link, "{}");
  still_device();
  Exec r = sh(dir, kTool + " export-perfetto " + good_path + " -o " + link);
  EXPECT_EQ(r.code, 0) << r.err;
  still_device();
  r = sh(dir, kTool + " diff " + good_path + " " + good_path + " -o " + link);
  EXPECT_EQ(r.code, 0) << r.err;
  still_device();
  for (const std::string& target : {link, dir + "/null.json.gz"}) {  // MINFER_TRACE=... the recorder
    if (target != link) fs::create_symlink("/dev/null", target);
    RecorderOptions o;
    o.path = target;
    Recorder rec(o, synth::meta(), synth::token_text);
    synth::Run run;
    run.n_decode = 1;
    synth::run(rec, run);
    rec.finish({{"load_ms", 1.0}});
    EXPECT_TRUE(fs::is_symlink(target)) << target;
    EXPECT_FALSE(fs::exists(target + ".partial")) << target;
  }
  still_device();
  // A FIFO gets the bytes written into it.
  const std::string fifo = dir + "/out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo);
    got.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  });
  write_output_file(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// Defect 5: a write that fails (disk full) is an error with a message and a non-zero exit.
TEST_F(Hardening, LostWritesAreErrors) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  for (const std::string& args : {"export-perfetto " + good_path + " -o -", "summary " + good_path,
                                  "validate " + good_path, "diff --json " + good_path + " " + good_path,
                                  "diff " + good_path + " " + good_path}) {
    const Exec r = sh(dir, kTool + " " + args, "/dev/full");
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_NE(r.err.find("standard output: write failed"), std::string::npos) << args << "\n" << r.err;
  }
  EXPECT_NE(error_of([] { write_output_file("/dev/full", std::string(1 << 16, 'x')); }).find("/dev/full: write failed"),
            std::string::npos);
}

// Defect 6: an out-of-range number names the file, the byte and the field.
TEST_F(Hardening, OutOfRangeNumbersNameTheField) {
  json t = good;
  t["steps"][1]["time_ms"] = 123.25;
  std::string text = t.dump();
  const size_t at = text.find("123.25");
  text.replace(at, 6, "1e309");
  const std::string path = dir + "/overflow.json";
  write(path, text);
  const std::string e = error_of([&] { load_trace(path); });
  EXPECT_NE(e.find("overflow.json: not valid JSON at byte "), std::string::npos) << e;
  EXPECT_NE(e.find("(/steps/1/time_ms): number 1e309 is out of range"), std::string::npos) << e;
  const Exec r = sh(dir, kTool + " validate " + path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/steps/1/time_ms"), std::string::npos) << r.err;
}

// Defect 9: bytes after the gzip stream, and a cut stream, are errors.
TEST_F(Hardening, CorruptGzipIsNotValid) {
  const std::string gz = gzip_bytes(good.dump());
  write(dir + "/trailing.json.gz", gz + "garbage");
  Exec r = sh(dir, kTool + " validate " + dir + "/trailing.json.gz");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("trailing.json.gz: unexpected bytes after the gzip data at byte " + std::to_string(gz.size())),
            std::string::npos) << r.err;
  write(dir + "/cut.json.gz", gz.substr(0, gz.size() - 9));
  EXPECT_NE(error_of([&] { load_trace(dir + "/cut.json.gz"); }).find("cut.json.gz: truncated gzip data"),
            std::string::npos);
  write(dir + "/two.json.gz", gzip_bytes(good.dump().substr(0, 1000)) + gzip_bytes(good.dump().substr(1000)));
  EXPECT_EQ(sh(dir, kTool + " validate " + dir + "/two.json.gz").code, 0);  // concatenated members are gzip
}

// Issue 31, item 2 (related): a trace followed by a NUL byte and junk was valid to every tool
// (nlohmann ends its input at a NUL); the winner's trace of two writers ended in 244k NULs and
// the loser's bytes.
TEST_F(Hardening, ATraceFollowedByANulByteAndJunkIsNotValid) {
  const std::string text = good.dump();
  const std::string nul = dir + "/nul.json", nul_gz = dir + "/nul.json.gz";
  write(nul, text + std::string(1, '\0') + "the loser's bytes");
  write(nul_gz, gzip_bytes(text + std::string(4096, '\0')));
  const std::string want = ": not valid JSON at byte " + std::to_string(text.size()) + ": a NUL byte";
  EXPECT_NE(error_of([&] { load_trace(nul); }).find("nul.json" + want), std::string::npos) << error_of([&] { load_trace(nul); });
  for (const std::string& path : {nul, nul_gz})
    for (const std::string& args : {"validate " + path, "summary " + path, "export-perfetto " + path + " -o " + dir + "/p.json",
                                    "diff " + good_path + " " + path, "diff --json " + path + " " + good_path}) {
      const Exec r = sh(dir, kTool + " " + args);
      EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
      EXPECT_NE(r.err.find(want), std::string::npos) << args << "\n" << r.err;
    }
  // A NUL inside the text is no better, and a text parsed from memory is read the same way.
  std::string inside = text;
  inside[inside.find("\"steps\"") - 1] = '\0';
  EXPECT_NE(error_of([&] { parse_json_text(inside, "t"); }).find("t: not valid JSON at byte "), std::string::npos);
  EXPECT_NE(error_of([&] { parse_json_text(inside, "t"); }).find(": a NUL byte"), std::string::npos);
  // A killed run's .partial zero-filled past its end (a crash of the machine) keeps its steps.
  const std::string padded = dir + "/padded.json.partial";
  write(padded, text + std::string(1000, '\0'));
  LoadInfo info;
  EXPECT_EQ(load_trace(padded, &info)["steps"].size(), good["steps"].size());
  EXPECT_TRUE(info.salvaged);
}

// Issue 31, item 2 (related): a trace with two "steps" keys was read as the first by the
// server's slices and as the last by the validator and the page. Every JSON reader of the tools
// now refuses a key written twice in one object, at any depth.
TEST_F(Hardening, AKeyTwiceInOneObjectIsNotValid) {
  std::string text = good.dump();
  ASSERT_EQ(text.back(), '}');
  const std::string two_steps = dir + "/two-steps.json";
  write(two_steps, text.substr(0, text.size() - 1) + ",\"steps\":[]}");
  for (const std::string& args : {"validate " + two_steps, "summary " + two_steps, "diff " + good_path + " " + two_steps}) {
    const Exec r = sh(dir, kTool + " " + args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.err.find("two-steps.json: not valid JSON (/steps): the key 'steps' appears twice in one object"), std::string::npos)
        << args << "\n" << r.err;
  }
  const size_t at = text.find("\"time_ms\":");  // a step's member
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "\"time_ms\":1,");
  const std::string deep = dir + "/two-times.json";
  write(deep, text);
  const std::string e = error_of([&] { load_trace(deep); });
  EXPECT_NE(e.find("two-times.json: not valid JSON (/steps/0/time_ms): the key 'time_ms' appears twice"), std::string::npos) << e;
  // Objects with many keys are checked too (past the small objects' in-place search).
  json wide = json::object();
  for (int i = 0; i < 100; ++i) wide["k" + std::to_string(i)] = i;
  std::string w = wide.dump();
  EXPECT_NO_THROW(parse_json_text(w, "wide"));
  w.insert(1, "\"k77\":0,");
  EXPECT_NE(error_of([&] { parse_json_text(w, "wide"); }).find("the key 'k77' appears twice"), std::string::npos);
}

// Defect 10: devices, FIFOs and directories are refused at once.
TEST_F(Hardening, SpecialFilesAreRefusedWithoutBlocking) {
  const std::string fifo = dir + "/trace.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { load_trace(fifo); }).find("trace.fifo: not a regular file"), std::string::npos);
  EXPECT_NE(error_of([] { load_trace("/dev/zero"); }).find("/dev/zero: not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { load_trace(dir); }).find("not a regular file (a directory)"), std::string::npos);
  EXPECT_NE(error_of([&] { GGUFFile::open(fifo); }).find("trace.fifo: not a regular file"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  const Exec r = sh(dir, kTool + " validate /dev/zero");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

// Defect 11: usage errors go to stderr with exit 2.
TEST_F(Hardening, NoArgumentsIsAUsageErrorOnStderr) {
  const Exec r = sh(dir, kTool);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("minfer-trace: missing COMMAND"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage: minfer-trace"), std::string::npos) << r.err;
  const Exec help = sh(dir, kTool + " --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: minfer-trace"), std::string::npos);
}

// The CLI side of defects 4, 5, 10 and 11 (minfer, minfer-gen), when they are built.
TEST_F(Hardening, EngineToolsRefuseBadSeedsFifosAndLostOutput) {
  const std::string bin = std::string(MINFER_BINARY_DIR) + "/bin/";
  if (!fs::exists(bin + "minfer") || !fs::exists(bin + "minfer-gen")) GTEST_SKIP() << "minfer / minfer-gen not built in " << bin;
  for (const std::string seed : {"abc", "-1", "18446744073709551616", "1x"}) {
    const Exec r = sh(dir, bin + "minfer-gen --preset tiny --weights q8_0 --seed " + seed + " -o " + dir + "/x.gguf");
    EXPECT_EQ(r.code, 1) << seed;
    EXPECT_NE(r.err.find("--seed: expected an integer from 0 to 18446744073709551615, got '" + seed + "'"),
              std::string::npos) << r.err;
  }
  const std::string model = dir + "/tiny.gguf";
  ASSERT_EQ(sh(dir, bin + "minfer-gen --preset tiny --weights q8_0 --seed 3 -o " + model).code, 0);
  const std::string fifo = dir + "/model.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Exec r = sh(dir, bin + "minfer " + fifo + " hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("model.fifo: not a regular file"), std::string::npos) << r.err;
  const std::string link = dir + "/graph.json", trace_link = dir + "/trace.json";
  fs::create_symlink("/dev/null", link);
  fs::create_symlink("/dev/null", trace_link);
  r = sh(dir, "env MINFER_TRACE=" + trace_link + " " + bin + "minfer " + model + " hi -n 2 --dump-graph " + link);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_symlink(trace_link));
  if (fs::exists("/dev/full")) {
    r = sh(dir, bin + "minfer " + model + " hi -n 2", "/dev/full");
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("standard output: write failed"), std::string::npos) << r.err;
    r = sh(dir, bin + "minfer tokenize " + model + " hi", "/dev/full");
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("standard output: write failed"), std::string::npos) << r.err;
  }
}

}  // namespace
