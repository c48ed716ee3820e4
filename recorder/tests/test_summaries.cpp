// Unit tests of the numeric pieces: tensor summaries against a naive reference, logits top-k /
// entropy / rank, number and string output, SHA-256, node and step selection, option parsing.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <limits>
#include <random>

#include "core/environment.h"
#include "core/error.h"
#include "json_out.h"
#include "format/json_schema.h"
#include "probes/logits_summary.h"
#include "probes/summarize.h"
#include "recorder_options.h"
#include "selection.h"
#include "sha256.h"

using namespace minfer;
using namespace minfer::trace;

namespace {

std::vector<float> random_tensor(int64_t n, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.5f, 2.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  if (specials) {
    const float inf = std::numeric_limits<float>::infinity();
    v[3] = std::nanf("");
    v[17] = inf;
    v[18] = -inf;
    v[static_cast<size_t>(n - 1)] = std::nanf("");
    v[40] = 75.f;  // an outlier sets the histogram range
  }
  return v;
}

}  // namespace

TEST(SummarizeHost, MatchesNaiveReference) {
  for (bool specials : {false, true}) {
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 896}, {7, 4864}, {100, 130}, {3, 5}}) {
      const auto v = random_tensor(rows * cols, 42 + rows, specials && rows * cols > 40);
      SummarySpec spec;
      spec.grid_rows = 32;
      spec.grid_cols = 64;
      spec.hist_bins = 16;
      const TensorSummary s = summarize_host(v.data(), rows, cols, spec);

      // Naive reference, written independently: long double sums, explicit loops.
      long double sum = 0, abssum = 0;
      double lo = INFINITY, hi = -INFINITY;
      int64_t nan = 0, inf = 0, fin = 0;
      for (float x : v) {
        if (std::isnan(x)) { ++nan; continue; }
        if (std::isinf(x)) { ++inf; continue; }
        sum += x; abssum += std::fabs(x); lo = std::min<double>(lo, x); hi = std::max<double>(hi, x); ++fin;
      }
      const long double mean = sum / fin;
      long double var = 0;
      for (float x : v)
        if (std::isfinite(x)) var += (x - mean) * (x - mean);
      EXPECT_EQ(s.stats.count, rows * cols);
      EXPECT_EQ(s.stats.nan, nan);
      EXPECT_EQ(s.stats.inf, inf);
      EXPECT_DOUBLE_EQ(s.stats.min, lo);
      EXPECT_DOUBLE_EQ(s.stats.max, hi);
      EXPECT_NEAR(s.stats.mean, static_cast<double>(mean), 1e-9 * (1 + std::fabs(static_cast<double>(mean))));
      EXPECT_NEAR(s.stats.absmean, static_cast<double>(abssum / fin), 1e-9);
      EXPECT_NEAR(s.stats.std, std::sqrt(static_cast<double>(var / fin)), 1e-9);

      // Grid: ceil strides, the element at (r*rs, c*cs).
      const int64_t rs = rows <= 32 ? 1 : (rows + 31) / 32, cs = cols <= 64 ? 1 : (cols + 63) / 64;
      ASSERT_EQ(s.grid.row_stride, rs);
      ASSERT_EQ(s.grid.col_stride, cs);
      ASSERT_EQ(s.grid.rows, (rows + rs - 1) / rs);
      ASSERT_EQ(s.grid.cols, (cols + cs - 1) / cs);
      ASSERT_EQ(s.grid.values.size(), static_cast<size_t>(s.grid.rows * s.grid.cols));
      for (int r = 0; r < s.grid.rows; ++r)
        for (int c = 0; c < s.grid.cols; ++c) {
          const float want = v[static_cast<size_t>(r * rs * cols + c * cs)];
          const float got = s.grid.values[static_cast<size_t>(r * s.grid.cols + c)];
          if (std::isnan(want)) EXPECT_TRUE(std::isnan(got));
          else EXPECT_EQ(got, want);
        }

      // Histogram: every finite value in exactly one bin; infinities in under/overflow.
      std::vector<int64_t> counts(16, 0);
      for (float x : v) {
        if (!std::isfinite(x)) continue;
        int64_t b = static_cast<int64_t>((x - lo) * (16 / (hi - lo)));
        counts[static_cast<size_t>(std::clamp<int64_t>(b, 0, 15))]++;
      }
      EXPECT_EQ(s.hist.counts, counts);
      EXPECT_EQ(s.hist.lo, lo);
      EXPECT_EQ(s.hist.hi, hi);
      EXPECT_EQ(s.hist.underflow, specials && rows * cols > 40 ? 1 : 0);
      EXPECT_EQ(s.hist.overflow, specials && rows * cols > 40 ? 1 : 0);
    }
  }
}

TEST(SummarizeHost, AllNonFiniteAndConstantAndDisabledParts) {
  const float nan = std::nanf("");
  std::vector<float> bad = {nan, nan, INFINITY, nan};
  TensorSummary s = summarize_host(bad.data(), 2, 2, SummarySpec{});
  EXPECT_TRUE(std::isnan(s.stats.min));
  EXPECT_EQ(s.stats.nan, 3);
  EXPECT_EQ(s.hist.overflow, 1);
  int64_t in_bins = 0;
  for (auto c : s.hist.counts) in_bins += c;
  EXPECT_EQ(in_bins, 0);

  std::vector<float> flat(12, 2.5f);
  s = summarize_host(flat.data(), 3, 4, SummarySpec{});
  EXPECT_EQ(s.stats.std, 0);
  EXPECT_EQ(s.hist.counts[0], 12);  // hi == lo: all in bin 0

  SummarySpec none;
  none.grid_rows = 0;
  none.hist_bins = 0;
  s = summarize_host(flat.data(), 3, 4, none);
  EXPECT_TRUE(s.grid.values.empty());
  EXPECT_TRUE(s.hist.counts.empty());
  EXPECT_EQ(s.stats.mean, 2.5);
}

TEST(LogitsSummary, TopKEntropyAndRankAgainstDirectFormulas) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd(0.f, 4.f);
  std::vector<float> x(5000);
  for (auto& v : x) v = nd(rng) + 800.f;  // large offset: a naive exp() would overflow
  x[123] = x[456] = 830.f;                // a tie at the top: the lower id ranks first
  const int32_t chosen = 77;
  const LogitsSummary s = summarize_logits(x.data(), 5000, chosen, 10);

  long double z = 0;
  for (float v : x) z += std::exp(static_cast<long double>(v) - 830.0L);
  long double h = 0;
  for (float v : x) {
    const long double p = std::exp(static_cast<long double>(v) - 830.0L) / z;
    if (p > 0) h -= p * std::log(p);
  }
  EXPECT_NEAR(s.entropy, static_cast<double>(h), 1e-9);
  ASSERT_EQ(s.top.size(), 10u);
  EXPECT_EQ(s.top[0].id, 123);
  EXPECT_EQ(s.top[1].id, 456);
  std::vector<int> order(5000);
  for (int i = 0; i < 5000; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return x[a] > x[b]; });
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(s.top[i].id, order[i]);
    EXPECT_NEAR(s.top[i].p, static_cast<double>(std::exp(static_cast<long double>(x[order[i]]) - 830.0L) / z), 1e-12);
  }
  const int64_t rank = std::find(order.begin(), order.end(), chosen) - order.begin();
  EXPECT_EQ(s.chosen_rank, rank);
  EXPECT_NEAR(s.chosen_p, static_cast<double>(std::exp(static_cast<long double>(x[chosen]) - 830.0L) / z), 1e-15);

  // NaN logits carry no probability and rank last.
  x[5] = std::nanf("");
  const LogitsSummary t = summarize_logits(x.data(), 5000, 5, 3);
  EXPECT_EQ(t.nonfinite, 1);
  EXPECT_EQ(t.chosen_rank, 4999);
  EXPECT_EQ(t.chosen_p, 0);
  // Uniform logits: entropy log(n).
  std::vector<float> u(1000, 1.5f);
  EXPECT_NEAR(summarize_logits(u.data(), 1000, 0, 5).entropy, std::log(1000.0), 1e-12);
}

TEST(JsonOut, NumbersSixDigitsNonFiniteNullAndUtf8) {
  std::string o;
  append_number(o, 3.14159265);
  o += ',';
  append_number(o, std::nan(""));
  o += ',';
  append_number(o, -INFINITY);
  o += ',';
  append_number(o, 1.5e-9);
  EXPECT_EQ(o, "3.14159,null,null,1.5e-09");
  EXPECT_EQ(round6(123.4567891), 123.457);
  std::string s;
  append_string(s, std::string("a\"b\n\x01\xE4\xBD", 7));
  EXPECT_EQ(s, "\"a\\\"b\\n\\u0001\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(sanitize_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"), "h\xC3\xA9llo \xF0\x9F\x98\x80");
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong encoding
}

// append_number's fixed-notation shortcut gives exactly what the general conversion gives:
// random floats and doubles across the magnitudes it covers and beyond, each power of ten and
// its neighbours, and values on a rounding tie of the sixth digit.
TEST(JsonOut, NumbersEqualTheGeneralConversion) {
  auto general = [](double v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
    return std::string(buf, r.ptr);
  };
  std::vector<double> vs = {0.0, -0.0, 1.0, -1.0, 0.5, 999999.5, 999999.4, 99999.95, 9.999995, 0.000099999949,
                            0.00009999995, 0.0001, 123456.5, 1.234565, 2.5e-5};
  for (int e = -6; e <= 7; ++e) {
    const double p = std::pow(10.0, e);
    vs.insert(vs.end(), {p, std::nextafter(p, 0.0), std::nextafter(p, 1e300), -p});
    for (int d = 1; d < 10; ++d) vs.push_back((d + 0.5e-5) * p);  // ties of the sixth digit
  }
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mant(1.0, 10.0);
  std::uniform_int_distribution<int> exp10(-7, 7);
  for (int i = 0; i < 200000; ++i) {
    const double v = mant(rng) * std::pow(10.0, exp10(rng)) * (i % 3 ? 1 : -1);
    vs.push_back(v);
    vs.push_back(static_cast<float>(v));  // a trace's values are mostly floats
  }
  for (double v : vs) {
    std::string o;
    append_number(o, v);
    ASSERT_EQ(o, general(v)) << "value " << std::hexfloat << v;
  }
}

// The validator's keywords, its messages and its limits on a schema that uses each of them
// (the trace schemas use them all). Kept exact: the compiled validator (issue 31, item 10: a
// trace validates ~4x faster) must say what the keyword-by-keyword one said.
TEST(SchemaValidator, EveryKeywordItsMessageAndTheLimits) {
  using minfer::trace::SchemaValidator;
  const nlohmann::json schema = nlohmann::json::parse(R"({
    "$defs": {"pos": {"type": "number", "minimum": 0, "maximum": 10}, "loop": {"$ref": "#/$defs/loop"}},
    "type": "object", "required": ["a", "b"], "additionalProperties": false,
    "properties": {
      "a": {"$ref": "#/$defs/pos"}, "b": {"type": ["string", "null"]}, "c": {"enum": [1, "x"]},
      "d": {"const": true}, "e": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}},
      "f": {"oneOf": [{"type": "integer"}, {"type": "number"}]}, "g": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "h": false, "m": {"type": "object", "additionalProperties": {"type": "string"}}, "r": {"$ref": "#/$defs/loop"}}})");
  const SchemaValidator v(schema);
  const auto errors = [&](const char* doc, size_t cap = 50) { return v.validate(nlohmann::json::parse(doc), cap); };
  using E = std::vector<std::string>;
  EXPECT_EQ(errors(R"({"a": 5, "b": null, "e": [2.0], "f": 1.5, "g": null, "m": {"k": "v"}})"), E{});
  EXPECT_EQ(errors("{}"), (E{"/: missing required field 'a'", "/: missing required field 'b'"}));
  EXPECT_EQ(errors("{}", 1), E{"/: missing required field 'a'"});
  EXPECT_EQ(errors(R"({"a": -1, "b": 3})"), (E{"/a: -1 is below the minimum 0", "/b: expected string or null, got integer"}));
  EXPECT_EQ(errors(R"({"a": 11, "b": "s", "c": 2, "d": false})"),
            (E{"/a: 11 is above the maximum 10", "/c: 2 is not one of [1,\"x\"]", "/d: expected true, got false"}));
  EXPECT_EQ(errors(R"({"a": 1, "b": "s", "e": []})"), E{"/e: has 0 items, at least 1 expected"});
  EXPECT_EQ(errors(R"({"a": 1, "b": "s", "e": [1, 2.5, 1e300]})"),
            (E{"/e: has 3 items, at most 2 expected", "/e/1: expected integer, got number", "/e/2: expected integer, got number"}));
  EXPECT_EQ(errors(R"({"a": 1, "b": "s", "f": 3})"), E{"/f: matches 2 of the oneOf alternatives, exactly one expected"});
  EXPECT_EQ(errors(R"({"a": 1, "b": "s", "f": "x"})"),
            E{"/f: matches none of the oneOf alternatives; the closest (#0) fails with: /f: expected integer, got string"});
  EXPECT_EQ(errors(R"({"a": 1, "b": "s", "g": 1})"),
            E{"/g: matches none of the anyOf alternatives; the closest (#0) fails with: /g: expected string, got integer"});
  EXPECT_EQ(errors(R"({"a": 1, "b": "s", "h": 1, "zz": 1})"), (E{"/h: no value is allowed here", "/: unexpected field 'zz'"}));
  EXPECT_EQ(errors(R"({"a": 1, "b": "s", "m": {"x/y~": 1}})"), E{"/m/x~1y~0: expected string, got integer"});
  EXPECT_EQ(errors(R"([1])"), E{"/: expected object, got array"});
  try {
    errors(R"({"a": 1, "b": "s", "r": 1})");
    ADD_FAILURE() << "a $ref cycle was followed forever";
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested checks (a $ref cycle?)"), std::string::npos) << e.what();
  }
  try {
    SchemaValidator bad(nlohmann::json{{"type", "object"}, {"pattern", "x"}});
    ADD_FAILURE() << "an unsupported keyword was accepted";
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("keyword 'pattern' is not supported by this validator"), std::string::npos) << e.what();
  }
  minfer::trace::CancelFlag set{true};
  EXPECT_THROW(v.validate(nlohmann::json::parse(R"({"a": 1, "b": "s", "e": [1]})"), 50, &set), minfer::trace::Cancelled);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(m.data(), m.size()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FileDigestIsCachedByIdentity) {
  const auto dir = std::filesystem::temp_directory_path() / ("minfer-sha-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cache = digest_cache_dir({{"MINFER_CACHE_DIR", (dir / "cache").string()}, {"HOME", "/nowhere"}});
  EXPECT_EQ(cache, (dir / "cache").string());
  const std::string f = (dir / "model.bin").string();
  { std::ofstream(f) << "abc"; }
  const std::string want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  EXPECT_EQ(sha256_file(f, cache), want);
  const std::string cached = sha256_cache_path(f, cache);
  ASSERT_FALSE(cached.empty());
  ASSERT_TRUE(std::filesystem::exists(cached));
  // The cached digest is used for the same file identity…
  { std::ofstream(cached) << std::string(64, 'e') << "\n"; }
  EXPECT_EQ(sha256_file(f, cache), std::string(64, 'e'));
  EXPECT_EQ(sha256_file(f, ""), want);
  EXPECT_EQ(sha256_cache_path(f, ""), "");
  // …and a changed file (size, mtime) is hashed again.
  { std::ofstream(f) << "abcd"; }
  EXPECT_EQ(sha256_file(f, cache), sha256_hex("abcd", 4));
  std::filesystem::remove_all(dir);
}

// The cache directory: $MINFER_CACHE_DIR, else $XDG_CACHE_HOME/minfer, else ~/.cache/minfer
// (empty values count as unset); none of them: no cache.
TEST(Sha256, DigestCacheDirFromTheEnvironment) {
  EXPECT_EQ(digest_cache_dir({{"MINFER_CACHE_DIR", "/c"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}), "/c");
  EXPECT_EQ(digest_cache_dir({{"MINFER_CACHE_DIR", ""}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}), "/x/minfer");
  EXPECT_EQ(digest_cache_dir({{"XDG_CACHE_HOME", ""}, {"HOME", "/h"}}), "/h/.cache/minfer");
  EXPECT_EQ(digest_cache_dir({{"HOME", ""}}), "");
  EXPECT_EQ(digest_cache_dir({}), "");
}

TEST(Selection, GlobsAndStepLists) {
  EXPECT_TRUE(glob_match("blk.*.attn_*", "blk.12.attn_q"));
  EXPECT_FALSE(glob_match("blk.*.attn_*", "blk.12.ffn_up"));
  EXPECT_TRUE(glob_match("blk.?.ffn_*", "blk.3.ffn_down"));
  EXPECT_FALSE(glob_match("blk.?.ffn_*", "blk.13.ffn_down"));
  EXPECT_TRUE(glob_match("blk.[12].attn_q", "blk.2.attn_q"));  // fnmatch sets
  EXPECT_FALSE(glob_match("blk.[12].attn_q", "blk.3.attn_q"));
  NodeFilter f("blk.*.attn_*, logits", "test");
  EXPECT_TRUE(f.matches("logits"));
  EXPECT_TRUE(f.matches("blk.0.attn_norm"));
  EXPECT_FALSE(f.matches("token_embd"));
  StepFilter s("0-2,10,20-", "test");
  for (int i : {0, 1, 2, 10, 20, 99}) EXPECT_TRUE(s.contains(i)) << i;
  for (int i : {3, 9, 11, 19}) EXPECT_FALSE(s.contains(i)) << i;
  EXPECT_FALSE(StepFilter("none", "t").contains(0));
  EXPECT_TRUE(StepFilter("decode", "t").contains(5));
  EXPECT_FALSE(StepFilter("decode", "t").contains(0));
  EXPECT_THROW(StepFilter("3-1", "t"), Error);
  EXPECT_THROW(StepFilter("x", "t"), Error);
}

TEST(RecorderOptions, EnvThenFlagsWithTheRestLeftForTheCli) {
  std::map<std::string, std::string> env = {{"MINFER_TRACE", "env.json"}, {"MINFER_TRACE_GRID", "16x32"},
                                            {"MINFER_TRACE_STEPS", "0-3"}, {"MINFER_TRACE_STATS_ONLY", "0"}};
  std::vector<std::string> args = {"model.gguf", "--trace", "flag.json", "hi", "--trace-bins=8",
                                   "--trace-nodes", "blk.*", "-n", "4", "--trace-stats-only", "--trace-topk", "5"};
  RecorderOptions o = RecorderOptions::from_env_and_args(env, args);
  EXPECT_EQ(o.path, "flag.json");
  EXPECT_EQ(o.grid_rows, 16);
  EXPECT_EQ(o.grid_cols, 32);
  EXPECT_EQ(o.hist_bins, 8);
  EXPECT_EQ(o.top_k, 5);
  EXPECT_EQ(o.nodes, "blk.*");
  EXPECT_EQ(o.steps, "0-3");
  EXPECT_TRUE(o.stats_only);
  EXPECT_EQ(o.spec().grid_rows, 0);
  EXPECT_EQ(args, (std::vector<std::string>{"model.gguf", "hi", "-n", "4"}));
  EXPECT_FALSE(o.step_by_step);

  // A switch takes no separate value: the next argument stays the CLI's.
  std::vector<std::string> sw = {"--trace-step-by-step", "m.gguf"};
  EXPECT_TRUE(RecorderOptions::from_env_and_args({}, sw).step_by_step);
  EXPECT_EQ(sw, (std::vector<std::string>{"m.gguf"}));
  std::vector<std::string> off = {"--trace-step-by-step=0"};
  EXPECT_FALSE(RecorderOptions::from_env_and_args({{"MINFER_TRACE_STEP_BY_STEP", "1"}}, off).step_by_step);
  std::vector<std::string> none = {"m", "p"};
  EXPECT_FALSE(RecorderOptions::from_env_and_args({}, none).enabled());
  auto bad = [](std::map<std::string, std::string> e, std::vector<std::string> a) {
    try {
      RecorderOptions::from_env_and_args(e, a);
    } catch (const Error& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(bad({{"MINFER_TRACE_GRID", "32by64"}}, {}).find("MINFER_TRACE_GRID"), std::string::npos);
  EXPECT_NE(bad({}, {"--trace-bogus", "1"}).find("--trace-bogus"), std::string::npos);
  EXPECT_NE(bad({}, {"--trace-bins", "-3"}).find("--trace-bins"), std::string::npos);
  EXPECT_NE(bad({}, {"--trace"}).find("needs a value"), std::string::npos);
}

// The process environment as a main reads it (process_environment()): every MINFER_TRACE*
// variable is read (MINFER_TRACE_KERNELS once was not).
TEST(RecorderOptions, EveryVariableIsReadFromTheProcessEnvironment) {
  setenv("MINFER_TRACE", "proc.json", 1);
  setenv("MINFER_TRACE_KERNELS", "none", 1);
  setenv("MINFER_TRACE_OUTLIERS", "3", 1);
  setenv("MINFER_TRACE_STEP_BY_STEP", "1", 1);
  std::vector<std::string> args;
  const RecorderOptions o = RecorderOptions::from_env_and_args(process_environment(), args);
  unsetenv("MINFER_TRACE");
  unsetenv("MINFER_TRACE_KERNELS");
  unsetenv("MINFER_TRACE_OUTLIERS");
  unsetenv("MINFER_TRACE_STEP_BY_STEP");
  EXPECT_EQ(o.path, "proc.json");
  EXPECT_EQ(o.kernel_steps, "none");
  EXPECT_EQ(o.outliers, 3);
  EXPECT_TRUE(o.step_by_step);
}
