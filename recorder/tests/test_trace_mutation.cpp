// Damaged traces through every reader the tools have: load + validate (minfer-trace validate),
// then, for traces that validate, summary, export-perfetto, diff against the original and
// themselves, and the paired diff of the trace alone. Each must end in a result or a minfer::Error naming the problem: no crash, no
// other exception (the "unexpected error" of raw library text), no hang. Under ASan + UBSan
// (scripts/run-trace-fuzz.sh) it also proves there is no out-of-bounds read or undefined
// behaviour. Every 25th mutant also goes through the minfer-trace program itself.
//
//   MINFER_TRACE_MUTATIONS=N (default 300), MINFER_TRACE_FUZZ_SEED=S (default 1)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "format/checked_trace.h"
#include "core/error.h"
#include "mutation_base.h"
#include "perfetto_export.h"
#include "test_tmp.h"
#include "format/trace_check.h"
#include "trace_diff.h"
#include "trace_mutator.h"
#include "trace_summary.h"

using namespace minfer;
using namespace minfer::trace;
using nlohmann::json;

namespace {

namespace fuzz = minfer::trace::testing;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

enum class Outcome { RefusedAtLoad, Invalid, ReadByAll };

// Everything minfer-trace does with a file, in process. Errors other than minfer::Error escape.
Outcome read_every_way(const std::string& path, const json& original) {
  json t;
  try {
    t = load_trace(path);
  } catch (const Error&) {
    return Outcome::RefusedAtLoad;
  }
  (void)validate_trace(t);
  try {
    require_valid_trace(t, path);
  } catch (const Error&) {
    return Outcome::Invalid;
  }
  EXPECT_FALSE(summarize_trace(t).empty());
  EXPECT_FALSE(to_perfetto(t).dump().empty());
  for (const auto& [a, b] : {std::pair<const json*, const json*>{&original, &t}, {&t, &original}, {&t, &t}}) {
    try {
      (void)diff(*a, *b).dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const Error&) {  // not comparable (a different graph or prompt): a clear refusal
    }
  }
  try {
    (void)diff_paired(t).dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const Error&) {  // no longer paired (meta.compare damaged away)
  }
  return Outcome::ReadByAll;
}

// The program: exit 0 or 1 with a message; 2 would be a usage error (never here), 3 an
// internal error, a signal a crash.
void run_tool(const std::string& dir, const std::string& file, const std::string& original, const std::string& what) {
  const std::string tool = MINFER_TRACE_TOOL;
  for (const std::string& args : {"validate " + file, "summary " + file, "export-perfetto " + file + " -o " + dir + "/p.json",
                                  "diff " + original + " " + file, "diff --json " + file + " " + file,
                                  "diff " + file}) {
    const int rc = std::system(("timeout 60 " + tool + " " + args + " > " + dir + "/tool.out 2>&1").c_str());
    const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
    std::ifstream out(dir + "/tool.out");
    const std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(code == 0 || code == 1) << "minfer-trace " << args << " exited " << code << " on mutant (" << what
                                        << "):\n" << text.substr(0, 2000);
    if (code == 1) {
      const std::string name = file.substr(file.find_last_of('/') + 1);  // diff names files by their name
      EXPECT_NE(text.find(name), std::string::npos) << args << ": the message does not name the file:\n" << text;
    }
  }
}

}  // namespace

TEST(TraceMutation, DamagedTracesAreReadOrRefusedWithAnError) {
  const std::string dir = fuzz::temp_dir("mutation");
  const json original = fuzz::small_valid_trace(dir + "/base.json");
  ASSERT_EQ(validate_trace(original), std::vector<std::string>{});
  const std::string original_path = dir + "/original.json";
  std::ofstream(original_path) << original.dump();

  const uint64_t n = env_or("MINFER_TRACE_MUTATIONS", 300), seed = env_or("MINFER_TRACE_FUZZ_SEED", 1);
  const double slow_limit_s = 20;  // per mutant, generous for ASan on a loaded 2-core machine
  const fuzz::TraceMutator mutator(original);
  size_t refused = 0, invalid = 0, read = 0, tool_runs = 0;
  // The crafted classes (trace_mutator.h): how many ran, and how many of those were refused.
  size_t key_twice = 0, key_twice_refused = 0, nul_after = 0, nul_after_refused = 0;
  double slowest = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const fuzz::Mutant m = mutator.make(seed * 1'000'003 + i);
    const std::string path = dir + "/m" + (m.gzip ? ".json.gz" : i % 7 == 0 ? ".json.partial" : ".json");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << m.bytes;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const Outcome o = read_every_way(path, original);
      switch (o) {
        case Outcome::RefusedAtLoad: ++refused; break;
        case Outcome::Invalid: ++invalid; break;
        case Outcome::ReadByAll: ++read; break;
      }
      if (m.crafted != fuzz::Crafted::None) {
        const bool key = m.crafted == fuzz::Crafted::KeyTwice;
        ++(key ? key_twice : nul_after);
        if (o == Outcome::RefusedAtLoad) ++(key ? key_twice_refused : nul_after_refused);
        // Refused at load, every time: unless its gzip is damaged (refused for that) or a
        // .partial's salvage cut the flaw away (a NUL tail or a last step holding the key).
        if (!m.gzip_damaged && path.find(".partial") == std::string::npos)
          EXPECT_EQ(o, Outcome::RefusedAtLoad) << "mutant " << i << " (" << m.what << ") was not refused at load";
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutant " << i << " (" << m.what << "): not a minfer::Error: " << e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slowest = std::max(slowest, s);
    EXPECT_LT(s, slow_limit_s) << "mutant " << i << " (" << m.what << ") took " << s << " s";
    if (i % 25 == 0) {
      run_tool(dir, path, original_path, m.what);
      ++tool_runs;
    }
    if (::testing::Test::HasFailure()) break;  // the first failure tells the story
    std::remove(path.c_str());
  }
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  std::printf("[mutation] %llu mutants (seed %llu): %zu refused at load, %zu invalid, %zu read by every reader; "
              "%zu through minfer-trace; slowest %.3f s; peak RSS %.1f MB\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(seed), refused, invalid, read,
              tool_runs, slowest, self.ru_maxrss / 1024.0);
  std::printf("[mutation] crafted: %zu with a key twice (%zu refused at load), %zu with NUL bytes after the text "
              "(%zu refused at load)\n", key_twice, key_twice_refused, nul_after, nul_after_refused);
  EXPECT_GT(refused, 0u);
  EXPECT_GT(invalid, 0u);
}
