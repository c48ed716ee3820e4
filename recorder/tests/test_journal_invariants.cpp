// Crafted journal records (not mutated ones): each field valid on its own, the fields that the
// step formatter reads together disagreeing. decode_step must refuse them with an Error naming
// the record; formatting them would read past a buffer (summarize_logits over `sampled` with
// the logits' length, compare_logits over the reference with the step's length).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "format/gpu_time_json.h"
#include "format/step_codec.h"
#include "format/step_json.h"
#include "format/step_record.h"

using namespace minfer;
using namespace minfer::trace;

namespace {

LogitsData logits_of(size_t n, float base) {
  LogitsData l;
  for (size_t i = 0; i < n; ++i) l.logits.push_back(base + static_cast<float>(i % 7));
  l.chosen = 3;
  l.temperature = 0.8f;
  return l;
}

StepData step_with(std::optional<LogitsData> logits, std::optional<LogitsData> ref = std::nullopt) {
  StepData d;
  d.info.phase = Phase::Decode;
  d.info.step = 1;
  d.info.pos0 = 4;
  d.info.tokens = {3};
  d.graph_id = "g0";
  d.logits = std::move(logits);
  d.ref_logits = std::move(ref);
  return d;
}

// Encodes d, decodes it and formats it as `minfer-trace recover` would.
std::string round_trip_text(const StepData& d) {
  std::vector<char> buf;
  const std::string bytes(encode_step(d, buf));
  const StepData back = decode_step(bytes.data(), bytes.size(), "crafted.journal");
  return StepFormatter(StepFormat{SummarySpec{}, 5, 0}, [](int32_t) { return std::string("t"); }).text(back);
}

void expect_refused(const StepData& d, const std::string& why) {
  try {
    round_trip_text(d);
    ADD_FAILURE() << "a record with " << why << " was decoded and formatted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("crafted.journal"), std::string::npos) << m;
    EXPECT_NE(m.find("not a journaled step"), std::string::npos) << m;
  }
}

}  // namespace

TEST(JournalInvariants, ConsistentRecordsFormat) {
  LogitsData l = logits_of(1000, 0.5f);
  l.has_sampled = true;
  l.sampled = l.logits;
  EXPECT_NE(round_trip_text(step_with(l, logits_of(1000, 0.25f))).find("\"sampled\""), std::string::npos);
}

TEST(JournalInvariants, SampledLogitsShorterThanTheLogitsAreRefused) {
  LogitsData l = logits_of(1 << 20, 0.5f);
  l.has_sampled = true;
  l.sampled.assign(16, 1.0f);
  expect_refused(step_with(l), "16 sampled logits beside 2^20 logits");
}

TEST(JournalInvariants, SampledLogitsLongerThanTheLogitsAreRefused) {
  LogitsData l = logits_of(16, 0.5f);
  l.has_sampled = true;
  l.sampled.assign(4096, 1.0f);
  expect_refused(step_with(l), "4096 sampled logits beside 16 logits");
}

TEST(JournalInvariants, ReferenceLogitsOfAnotherLengthAreRefused) {
  expect_refused(step_with(logits_of(1 << 16, 0.5f), logits_of(8, 0.5f)), "8 reference logits beside 2^16");
  expect_refused(step_with(logits_of(8, 0.5f), logits_of(1 << 16, 0.5f)), "2^16 reference logits beside 8");
}

// A node's reference summary goes out with its comparison; the formatter dereferenced the
// comparison unchecked (an empty std::optional: garbage, or an abort under _GLIBCXX_ASSERTIONS).
TEST(JournalInvariants, AReferenceSummaryWithoutItsComparisonIsRefused) {
  StepData d = step_with(logits_of(16, 0.5f));
  NodeData n;
  n.id = 0;
  n.rows = 1;
  n.cols = 4;
  n.ref = TensorSummary{};
  d.nodes.push_back(n);
  d.node_gpu.resize(1);
  expect_refused(d, "a reference summary without its comparison");
  d.nodes[0].full = TensorCompare{};
  EXPECT_NE(round_trip_text(d).find("\"cmp\""), std::string::npos);
}

namespace {

// Crafted records at random: every field the formatter reads together chosen on its own from
// lengths and values that fit or do not fit the others (logits and sampled and reference lengths,
// a summary beside raw logits, chosen and token ids outside the vocabulary, a reference summary
// without its comparison, outliers and grids that do not fit the node's shape, kernels naming
// absent nodes, a journal format with odd top_k and outlier counts).
struct Crafter {
  std::mt19937_64 rng;
  size_t pick(size_t n) { return static_cast<size_t>(rng() % n); }
  template <class T> T one_of(std::initializer_list<T> v) { return *(v.begin() + pick(v.size())); }
  int64_t size_near(int64_t n) { return std::max<int64_t>(0, one_of<int64_t>({0, 1, n - 1, n, n + 1, 2 * n + 3})); }
  int32_t id_near(int64_t n) {
    return one_of<int32_t>({-7, -1, 0, static_cast<int32_t>(n) - 1, static_cast<int32_t>(n), static_cast<int32_t>(n) + 5,
                            std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()});
  }
  float value() {
    switch (pick(8)) {
      case 0: return NAN;
      case 1: return INFINITY;
      case 2: return -INFINITY;
      case 3: return 3e38f;
      default: return static_cast<float>(static_cast<int>(pick(2001)) - 1000) / 100.0f;
    }
  }
  std::vector<float> values(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = value();
    return v;
  }
  TensorSummary summary(int64_t rows, int64_t cols) {
    TensorSummary t;
    t.stats = {value(), value(), value(), value(), value(), static_cast<int64_t>(pick(1000)) - 1, 0, 0};
    t.grid.rows = static_cast<int>(size_near(std::max<int64_t>(rows, 1)));
    t.grid.cols = static_cast<int>(size_near(std::max<int64_t>(cols, 1)));
    t.grid.row_stride = one_of<int64_t>({0, 1, 3, -1});
    t.grid.col_stride = one_of<int64_t>({0, 1, 5, -2});
    t.grid.values = values(size_near(static_cast<int64_t>(t.grid.rows) * t.grid.cols));
    t.hist.lo = value();
    t.hist.hi = value();
    t.hist.counts.assign(static_cast<size_t>(size_near(8)), static_cast<int64_t>(pick(10)));
    return t;
  }
  TensorCompare compare(int64_t n) {
    TensorCompare c;
    c.cosine = value();
    c.max_abs_diff = one_of<double>({0.0, 1.5, NAN});
    c.max_abs_at = one_of<int64_t>({-1, 0, n - 1, n, n + 9, std::numeric_limits<int64_t>::max()});
    c.n_beyond = static_cast<int64_t>(pick(5));
    return c;
  }
  LogitsData logits(int64_t n_vocab) {
    LogitsData l;
    l.chosen = id_near(n_vocab);
    l.temperature = one_of<float>({0.0f, 1.0f, 0.7f, -1.0f, NAN});
    l.repeat_penalty = one_of<float>({1.0f, 1.1f});
    l.has_sampled = pick(2) == 0;
    l.sampled_is_raw = pick(3) == 0;
    if (pick(4) == 0) {  // summarised by the backend
      LogitsSummary s;
      s.n_vocab = one_of<int64_t>({0, n_vocab, n_vocab + 100});
      for (size_t k = pick(6); k > 0; --k) s.top.push_back({id_near(n_vocab), 0.5, value()});
      s.chosen = id_near(n_vocab);
      s.chosen_rank = one_of<int64_t>({-1, 0, n_vocab});
      l.summary = s;
      if (pick(2) == 0) l.logits = values(size_near(n_vocab));  // raw logits beside it
    } else {
      l.logits = values(pick(3) == 0 ? size_near(n_vocab) : n_vocab);
    }
    if (l.has_sampled && !l.sampled_is_raw) l.sampled = values(pick(2) == 0 ? size_near(static_cast<int64_t>(l.logits.size())) : static_cast<int64_t>(l.logits.size()));
    return l;
  }
  StepData step() {
    StepData d;
    d.info.phase = pick(2) == 0 ? Phase::Prefill : Phase::Decode;
    d.info.step = static_cast<int>(pick(4));
    d.info.pos0 = static_cast<int>(pick(8));
    const int64_t n_vocab = one_of<int64_t>({1, 2, 40, 1000});
    for (size_t k = 1 + pick(3); k > 0; --k) d.info.tokens.push_back(id_near(n_vocab));
    d.graph_id = "g";
    d.selected = pick(4) != 0;
    const int n_nodes = static_cast<int>(pick(5));
    for (int id = 0; id < n_nodes; ++id) {
      NodeData nd;
      nd.id = pick(8) == 0 ? id_near(n_nodes) : id;
      nd.rows = one_of<int64_t>({0, 1, 3, -2});
      nd.cols = one_of<int64_t>({0, 1, 64, -1});
      if (pick(6) == 0) {
        nd.no_output = kNoOutputReasons[pick(std::size(kNoOutputReasons))];
      } else {
        nd.summary = summary(nd.rows, nd.cols);
        if (pick(2) == 0) nd.ref = summary(nd.rows, nd.cols);
        if (pick(2) == 0) nd.full = compare(nd.rows * nd.cols);
        if (pick(3) == 0) nd.local = compare(nd.rows * nd.cols);
        for (size_t k = pick(4); k > 0; --k)
          nd.outliers.push_back({one_of<int64_t>({-1, 0, nd.rows * nd.cols - 1, nd.rows * nd.cols, INT64_MAX}), value(), value()});
        nd.ref_present = pick(2) == 0;
        if (pick(4) == 0) nd.act_scales = BlockScales{value(), value(), value(), static_cast<int64_t>(pick(9)) - 1, one_of<int>({0, 32, -1})};
      }
      d.nodes.push_back(nd);
    }
    if (pick(6) != 0) d.logits = logits(n_vocab);
    if (pick(2) == 0) d.ref_logits = logits(n_vocab);
    for (size_t k = pick(3); k > 0; --k) {
      KernelRecord kr;
      kr.name = "k";
      kr.node = id_near(n_nodes);
      for (size_t c = pick(4); c > 0; --c) kr.covers.push_back(id_near(n_nodes));
      d.gpu.kernels.push_back(kr);
    }
    d.node_gpu = node_gpu_times(d.gpu.kernels, static_cast<size_t>(pick(8) == 0 ? size_near(n_nodes) : n_nodes));
    return d;
  }
  StepFormat format() {
    StepFormat f;
    f.spec.grid_rows = one_of<int>({0, 2, 32});
    f.spec.grid_cols = one_of<int>({0, 3, 64});
    f.spec.hist_bins = one_of<int>({0, 4, 32});
    f.top_k = one_of<int>({0, 1, 5, 1000, 100000, -1, std::numeric_limits<int>::max()});
    f.outliers = one_of<int>({0, 3, -1});
    return f;
  }
};

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

// Issue 31, item 5: crafted journal records (not mutated bytes) through what `minfer-trace
// recover` does with each: decode_step, then the step formatter. Each is refused with an Error or
// formatted to valid JSON; under ASan + UBSan (scripts/run-trace-fuzz.sh) nothing reads past a
// buffer. MINFER_JOURNAL_CRAFTED=N records (default 3000), MINFER_TRACE_FUZZ_SEED.
TEST(JournalInvariants, CraftedRecordsAreRefusedOrFormattedNeverReadPastABuffer) {
  const uint64_t n = env_or("MINFER_JOURNAL_CRAFTED", 3000), seed = env_or("MINFER_TRACE_FUZZ_SEED", 1);
  Crafter c{std::mt19937_64(seed * 7919 + 3)};
  size_t refused_at_decode = 0, refused_at_format = 0, formatted = 0;
  std::vector<char> buf;
  for (uint64_t i = 0; i < n && !::testing::Test::HasFailure(); ++i) {
    const StepData crafted = c.step();
    const StepFormat format = c.format();
    const std::string bytes(encode_step(crafted, buf));
    StepData back;
    try {
      back = decode_step(bytes.data(), bytes.size(), "crafted.journal");
    } catch (const Error&) {
      ++refused_at_decode;
      continue;
    }
    try {
      const std::string text =
          StepFormatter(format, [](int32_t id) { return id >= 0 && id < 1000 ? "t" + std::to_string(id) : std::string(); }).text(back);
      EXPECT_TRUE(nlohmann::json::accept(text)) << "record " << i << " formatted to invalid JSON: " << text.substr(0, 300);
      ++formatted;
    } catch (const Error&) {
      ++refused_at_format;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "record " << i << ": not a minfer::Error: " << e.what();
    }
  }
  std::printf("[crafted journal] %llu records (seed %llu): %zu refused at decode, %zu refused by the formatter, %zu formatted\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(seed), refused_at_decode, refused_at_format,
              formatted);
  EXPECT_GT(formatted, 0u);
  EXPECT_GT(refused_at_decode, 0u);
}
