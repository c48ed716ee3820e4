// Damaged traces through every minfer-viz route that reads a trace: the list (a streamed
// summary), the trace itself (as stored, gzip-compressed, or inflated from .json.gz) and the
// comparison with the original. Every answer must be 200 or a JSON error (422), never a 500, a
// crash or a hang; the server must stay healthy. Under ASan + UBSan (scripts/run-trace-fuzz.sh)
// this also checks the server's readers for memory errors.
//
//   MINFER_TRACE_MUTATIONS=N (default 300), MINFER_TRACE_FUZZ_SEED=S (default 1)
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>

#include "mutation_base.h"
#include "trace_mutator.h"
#include "viz_test_support.h"

namespace minfer::viz::test {
namespace {

namespace fuzz = minfer::trace::testing;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(VizMutation, DamagedTracesGetAnswersOrJsonErrorsNeverA500) {
  TempDir traces("mutation"), scratch("mutation-scratch");
  const json original = fuzz::small_valid_trace((scratch.path() / "base.json").string());
  write_file(traces.path() / "original.json", original.dump());
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  RunningServer server(config);
  auto cli = server.client();
  cli.set_decompress(false);

  const uint64_t n = env_or("MINFER_TRACE_MUTATIONS", 300), seed = env_or("MINFER_TRACE_FUZZ_SEED", 1);
  const fuzz::TraceMutator mutator(original);
  size_t listed_ok = 0, listed_error = 0, compared = 0, refused = 0, sliced = 0, not_sliced = 0;
  size_t key_twice = 0, nul_after = 0;  // crafted mutants (trace_mutator.h), each refused below
  double slowest = 0;
  for (uint64_t i = 0; i < n && !::testing::Test::HasFailure(); ++i) {
    const fuzz::Mutant m = mutator.make(seed * 1'000'003 + i);
    const std::string name = "m" + std::to_string(i) + (m.gzip ? ".json.gz" : ".json");
    write_file(traces.path() / name, m.bytes);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string ctx = "mutant " + std::to_string(i) + " (" + m.what + ")";

    auto list = cli.Get("/api/traces");
    ASSERT_TRUE(list) << ctx;
    ASSERT_EQ(list->status, 200) << ctx << ": " << list->body.substr(0, 300);
    bool listed_with_error = false;
    for (const json& e : json::parse(list->body))
      if (e["name"] == name) ((listed_with_error = e.contains("error")) ? listed_error : listed_ok)++;
    auto index = cli.Get("/api/slices/" + name + "/index");
    ASSERT_TRUE(index) << ctx;
    EXPECT_TRUE(index->status == 200 || index->status == 422) << ctx << " slices: " << index->status;
    ++(index->status == 200 ? sliced : not_sliced);

    for (const char* encoding : {"identity", "gzip"}) {
      auto r = cli.Get("/api/traces/" + name, {{"Accept-Encoding", encoding}});
      ASSERT_TRUE(r) << ctx << " fetch " << encoding;
      EXPECT_TRUE(r->status == 200 || r->status == 422) << ctx << " fetch " << encoding << ": " << r->status;
    }
    auto cmp = cli.Get("/api/compare?a=original.json&b=" + name);
    ASSERT_TRUE(cmp) << ctx;
    EXPECT_TRUE(cmp->status == 200 || cmp->status == 422) << ctx << ": " << cmp->status << " " << cmp->body.substr(0, 300);
    if (cmp->status == 422) {
      ++refused;
      EXPECT_NE(cmp->body.find("\"error\""), std::string::npos) << ctx;
      EXPECT_EQ(cmp->body.find(traces.path().string()), std::string::npos) << ctx << ": a server path in " << cmp->body;
    } else {
      ++compared;
    }
    // The crafted classes are refused by the comparison (which validates); a NUL after the text
    // or a second top-level "steps" by the list and the slices too (they read the top level).
    if (m.crafted != fuzz::Crafted::None && !m.gzip_damaged) {
      ++(m.crafted == fuzz::Crafted::KeyTwice ? key_twice : nul_after);
      EXPECT_EQ(cmp->status, 422) << ctx;
      if (m.crafted == fuzz::Crafted::NulAfter || m.what.find("top-level key 'steps' twice") != std::string::npos) {
        EXPECT_TRUE(listed_with_error) << ctx << ": listed without an error";
        EXPECT_EQ(index->status, 422) << ctx << ": sliced";
      }
    }
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    fs::remove(traces.path() / name);
  }
  auto health = cli.Get("/api/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("[viz mutation] %llu mutants (seed %llu): listed %zu with a summary, %zu with an error; compare "
              "answered %zu, refused %zu (422); slowest %.3f s; peak RSS %.1f MB\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(seed), listed_ok, listed_error,
              compared, refused, slowest, ru.ru_maxrss / 1024.0);
  std::printf("[viz mutation] slices index: %zu answered, %zu refused; crafted and refused: %zu with a key twice, "
              "%zu with NUL bytes after the text\n", sliced, not_sliced, key_twice, nul_after);
}

}  // namespace
}  // namespace minfer::viz::test
