// The server's small parts on their own: gzip codec (inflating through the recorder's capped
// reader), body cache, content negotiation, validators and the list summary's error messages.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "body_cache.h"
#include "event_log.h"
#include "core/error.h"
#include "http_util.h"
#include "listing_summary.h"
#include "viz_test_support.h"

namespace minfer::viz::test {
namespace {

std::string random_bytes(size_t n, uint32_t seed, int alphabet) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(1, alphabet);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(d(rng));
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Issue 31, item 6: every SSE connection to a finished live run copied the run's whole event log
// (196,004 events, 34 MB, per connection). Listeners now share the log's events and take them
// in bounded batches.
TEST(EventLog, ListenersShareTheEventsAndReadInBoundedBatches) {
  EventLog log;
  const size_t n = 3 * EventLog::kMaxBatch + 7;
  for (size_t k = 0; k < n; ++k) log.push("node", "{\"id\":" + std::to_string(k) + "}");
  log.close();
  auto read_all = [&log] {
    std::vector<EventLog::Event> all;
    bool done = false;
    while (!done) {
      auto batch = log.read(all.size(), std::chrono::milliseconds(0), done);
      EXPECT_LE(batch.size(), EventLog::kMaxBatch);
      EXPECT_TRUE(!batch.empty() || done);
      all.insert(all.end(), batch.begin(), batch.end());
    }
    return all;
  };
  const auto a = read_all(), b = read_all();
  ASSERT_EQ(a.size(), n);
  ASSERT_EQ(b.size(), n);
  EXPECT_EQ(*a[5], "event: node\ndata: {\"id\":5}\n\n");
  for (size_t k = 0; k < n; ++k) EXPECT_EQ(a[k].get(), b[k].get()) << "event " << k << " was copied";
}

TEST(GzipCodec, RoundTripsRandomAndCompressibleData) {
  for (size_t n : {size_t(0), size_t(1), size_t(1000), size_t(300000)}) {
    for (int alphabet : {4, 255}) {
      std::string raw = random_bytes(n, static_cast<uint32_t>(n + alphabet), alphabet);
      std::string gz = gzip_compress(raw);
      EXPECT_TRUE(looks_gzipped(gz));
      EXPECT_EQ(gzip_decompress(gz, "t"), raw) << n << " " << alphabet;
      if (alphabet == 4 && n >= 1000) {
        EXPECT_LT(gz.size(), raw.size() / 2);
      }
    }
  }
  // Concatenated members inflate to the concatenation.
  std::string a = random_bytes(5000, 1, 16), b = random_bytes(7000, 2, 16);
  EXPECT_EQ(gzip_decompress(gzip_compress(a) + gzip_compress(b), "t"), a + b);
}

TEST(GzipCodec, CorruptTruncatedAndOversizedInputsAreErrorsNamingTheSource) {
  std::string raw = random_bytes(100000, 3, 8);
  std::string gz = gzip_compress(raw);
  EXPECT_NE(error_of([&] { gzip_decompress(gz.substr(0, gz.size() / 2), "half.json.gz"); })
                .find("half.json.gz: truncated gzip data"),
            std::string::npos);
  std::string bad = gz;
  bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x55);
  bad[bad.size() / 2 + 1] = static_cast<char>(bad[bad.size() / 2 + 1] ^ 0xAA);
  EXPECT_NE(error_of([&] { gzip_decompress(bad, "flipped.gz"); }).find("flipped.gz: corrupt gzip data"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gzip_decompress(gz, "bomb.gz", 1000); }).find("bomb.gz: the JSON text is larger than the limit of 1000"),
            std::string::npos);
  // Bytes after the gzip stream are not silently ignored (gzread would stop there).
  EXPECT_NE(error_of([&] { gzip_decompress(gz + "garbage", "trailing.gz"); }).find("trailing.gz: unexpected bytes after the gzip data"),
            std::string::npos);
  EXPECT_FALSE(looks_gzipped("{\"format\""));
}

// The byte budget counts size(): a body must not hold more than that (a gzip buffer is
// allocated for the worst case, about 4x what it ends up holding).
TEST(BodyCache, HoldsNoMoreMemoryThanItCounts) {
  BodyCache cache;
  Body b = cache.get("k", [] {
    std::string s(1 << 20, 'x');
    s.resize(10);
    return s;
  });
  EXPECT_EQ(cache.bytes(), 10u);
  EXPECT_LT(b->capacity(), 1024u);
}

TEST(BodyCache, ComputesOncePerKeyEvenUnderConcurrency) {
  BodyCache cache;
  std::atomic<int> calls{0};
  auto make = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::string(1000, 'x');
  };
  std::vector<std::thread> threads;
  std::vector<Body> got(8);
  for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { got[i] = cache.get("k", make); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const Body& b : got) EXPECT_EQ(b.get(), got[0].get());
  EXPECT_EQ(cache.bytes(), 1000u);
}

// Issue 31, item 7: two clients ask for the same comparison; the one computing it leaves
// (its work stops with trace::Cancelled). The other, still waiting, must get the body (it
// computes it itself), not the first one's cancellation; a waiter that leaves stops waiting.
TEST(BodyCache, AWaiterComputesWhatACancelledCallerLeftAndAWaiterCanLeave) {
  BodyCache cache;
  trace::CancelFlag first_left{false}, second_stays{false}, third_left{false};
  std::atomic<bool> started{false};
  std::thread first([&] {
    EXPECT_THROW(cache.get("k", [&]() -> std::string {
      started = true;
      while (true) {
        trace::stop_if_cancelled(&first_left);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }, &first_left), trace::Cancelled);
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Body second_got;
  std::thread second([&] { second_got = cache.get("k", [] { return std::string("made by the second"); }, &second_stays); });
  std::thread third([&] { EXPECT_THROW(cache.get("k", [] { return std::string("x"); }, &third_left), trace::Cancelled); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // both wait for the first
  third_left = true;
  third.join();
  first_left = true;
  first.join();
  second.join();
  ASSERT_TRUE(second_got);
  EXPECT_EQ(*second_got, "made by the second");
  EXPECT_EQ(*cache.get("k", [] { return std::string("not again"); }), "made by the second");
}

TEST(BodyCache, FailuresAreNotCachedAndOldEntriesAreEvicted) {
  BodyCache cache(150);
  int calls = 0;
  EXPECT_THROW(cache.get("bad", [&]() -> std::string {
    ++calls;
    fail("boom");
  }),
               Error);
  EXPECT_EQ(cache.get("bad", [&] { ++calls; return std::string("ok"); })->size(), 2u);
  EXPECT_EQ(calls, 2);

  int made = 0;
  auto body = [&](char c) { return [&made, c] { ++made; return std::string(60, c); }; };
  cache.get("a", body('a'));
  cache.get("b", body('b'));  // 2 + 60 + 60 = 122 <= 150
  cache.get("a", body('a'));  // hit: "a" becomes the newest
  EXPECT_EQ(made, 2);
  cache.get("c", body('c'));  // over budget: the oldest ("bad", then "b") goes
  EXPECT_LE(cache.bytes(), 150u);
  cache.get("a", body('a'));
  EXPECT_EQ(made, 3);         // "a" survived
  cache.get("b", body('b'));
  EXPECT_EQ(made, 4);         // "b" was evicted
}

httplib::Request request_with(std::initializer_list<std::pair<std::string, std::string>> headers) {
  httplib::Request req;
  for (const auto& [k, v] : headers) req.headers.emplace(k, v);
  return req;
}

TEST(HttpUtil, AcceptEncodingNegotiation) {
  EXPECT_TRUE(accepts_gzip(request_with({{"Accept-Encoding", "gzip"}})));
  EXPECT_TRUE(accepts_gzip(request_with({{"Accept-Encoding", "br, GZIP;q=0.5"}})));
  EXPECT_TRUE(accepts_gzip(request_with({{"Accept-Encoding", "*"}})));
  EXPECT_FALSE(accepts_gzip(request_with({{"Accept-Encoding", "gzip;q=0"}})));
  EXPECT_FALSE(accepts_gzip(request_with({{"Accept-Encoding", "identity, br"}})));
  EXPECT_FALSE(accepts_gzip(request_with({})));
}

TEST(HttpUtil, EtagsAndIfNoneMatch) {
  std::string tag = file_etag(1234, 987654321);
  EXPECT_EQ(tag, "W/\"4d2-3ade68b1\"");
  EXPECT_NE(file_etag(1234, 987654322), tag);
  EXPECT_TRUE(etag_matches(request_with({{"If-None-Match", tag}}), tag));
  EXPECT_TRUE(etag_matches(request_with({{"If-None-Match", "\"4d2-3ade68b1\""}}), tag));  // weak cmp
  EXPECT_TRUE(etag_matches(request_with({{"If-None-Match", "\"x\", " + tag}}), tag));
  EXPECT_TRUE(etag_matches(request_with({{"If-None-Match", "*"}}), tag));
  EXPECT_FALSE(etag_matches(request_with({{"If-None-Match", "W/\"4d2-0\""}}), tag));
  EXPECT_FALSE(etag_matches(request_with({}), tag));
}

TEST(ListingSummary, ErrorsNameTheFileAndTheField) {
  auto err = [](const std::string& text) { return error_of([&] { summarize_trace(text, "x.json"); }); };
  EXPECT_NE(err("{\"format\": ").find("x.json: not valid JSON"), std::string::npos);
  EXPECT_NE(err("[1,2]").find("x.json: not a JSON object"), std::string::npos);
  EXPECT_NE(err("{\"format\": \"other\"}").find("field 'format' is 'other'"), std::string::npos);
  EXPECT_NE(err("{\"format\": \"minfer-trace\"}").find("field 'version'"), std::string::npos);
  // The newest version is read (its next error is the missing meta); the one after it is refused.
  const std::string newest = std::to_string(kHighestTraceVersion);
  const std::string next = std::to_string(kHighestTraceVersion + 1);
  EXPECT_NE(err("{\"format\": \"minfer-trace\", \"version\": " + newest + ", \"steps\": []}").find("field 'meta'"),
            std::string::npos);
  EXPECT_NE(err("{\"format\": \"minfer-trace\", \"version\": " + next + "}").find("unsupported trace version " + next),
            std::string::npos);
  EXPECT_NE(err("{\"format\": \"minfer-trace\", \"version\": 0}").find("unsupported trace version 0"), std::string::npos);
  EXPECT_NE(err("{\"format\": \"minfer-trace\", \"version\": 2, \"steps\": []}").find("field 'meta'"),
            std::string::npos);
  EXPECT_NE(err("{\"format\": \"minfer-trace\", \"version\": 2, \"meta\": {}, \"steps\": 5}")
                .find("field 'steps' is not an array"),
            std::string::npos);
}

TEST(ListingSummary, SummarizesAVersion2Trace) {
  TraceSpec spec;
  spec.decode_steps = 6;
  TraceSummary s = summarize_trace(make_trace(spec).dump(), "t.json");
  EXPECT_EQ(s.version, 2);
  EXPECT_EQ(s.model, "tiny-q8_0.gguf");
  EXPECT_EQ(s.matmul_path, "mmq");
  EXPECT_EQ(s.steps, 7);
  EXPECT_EQ(s.prompt_tokens, 5);
  EXPECT_EQ(s.generated_tokens, 7);
  EXPECT_TRUE(s.complete);
  json j = summary_to_json(s);
  EXPECT_EQ(j["tokens"], 12);
}

}  // namespace
}  // namespace minfer::viz::test
