// Regression tests for the server side of issue 12: a trace missing a field or holding an
// out-of-range number answers 422 naming it (not 500), deep nesting and decompression bombs are
// refused, corrupt gzip is not listed as a trace, Range headers never produce a wrong partial
// answer, slow clients cannot starve /api/health, and silent connections are closed.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "viz_fixture.h"

namespace minfer::viz::test {
namespace {

std::string error_text(const httplib::Result& r) {
  if (!r) return "(no answer)";
  try {
    return json::parse(r->body).value("error", "(no error field)");
  } catch (const std::exception&) {
    return "(not JSON) " + r->body.substr(0, 200);
  }
}

json list_entry(httplib::Client& cli, const std::string& name) {
  auto r = cli.Get("/api/traces");
  if (!r || r->status != 200) return json();
  for (const json& e : json::parse(r->body))
    if (e["name"] == name) return e;
  return json();
}

class VizHardening : public VizFixture {};

// Defect 1 (and 6): the comparison validates first and names the field.
TEST_F(VizHardening, CompareOfATraceMissingAFieldOrWithAnOutOfRangeNumberIs422) {
  json t = json::parse(mmq_text);
  for (auto& s : t["steps"]) s.erase("logits");
  write_file(traces.path() / "nologits.json", t.dump());
  std::string text = mmq_text;
  const size_t at = text.find("\"time_ms\":2.5");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 13, "\"time_ms\":1e309");
  write_file(traces.path() / "overflow.json", text);
  auto cli = client();
  auto r = cli.Get("/api/compare?a=tiny-mmq.json&b=nologits.json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422);
  EXPECT_NE(error_text(r).find("nologits.json: not a valid minfer-trace v2: /steps/0: missing required field 'logits'"),
            std::string::npos) << error_text(r);
  r = cli.Get("/api/compare?a=overflow.json&b=tiny-mmq.json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422);
  EXPECT_NE(error_text(r).find("(/steps/1/time_ms): number 1e309 is out of range"), std::string::npos) << error_text(r);
  EXPECT_EQ(r->body.find(traces.path().string()), std::string::npos) << "a server path in " << r->body;
}

// Issue 31, item 6: a trace of 1,000,000 tiny steps made the server build a 225 MB slice index
// (6.1 GB resident) and time out /api/compare. What one request may build is bounded by the
// number of steps (--max-steps, default 100,000); beyond it the answer is 413 naming the limit
// and the flag, before anything per step is built.
TEST_F(VizHardening, TracesWithMoreStepsThanTheLimitAreRefusedNamingTheFlag) {
  std::string text = json::parse(mmq_text).dump();
  const std::string steps_key = "\"steps\":[";
  const size_t at = text.find(steps_key);
  ASSERT_NE(at, std::string::npos);
  std::string more;
  const std::string one = R"({"nodes":[],"kernels":[]})";  // only the count matters here
  for (int k = 0; k < 100001; ++k) (more += one) += ',';
  text.insert(at + steps_key.size(), more);
  write_file(traces.path() / "many-steps.json", text);
  auto cli = client();
  for (const char* url : {"/api/slices/many-steps.json/index", "/api/slices/many-steps.json/steps/0",
                          "/api/compare?a=many-steps.json&b=tiny-mmq.json"}) {
    auto r = cli.Get(url);
    ASSERT_TRUE(r) << url;
    EXPECT_EQ(r->status, 413) << url << ": " << error_text(r);
    EXPECT_NE(error_text(r).find("many-steps.json has more than 100000 steps"), std::string::npos) << url << ": " << error_text(r);
    EXPECT_NE(error_text(r).find("--max-steps"), std::string::npos) << url << ": " << error_text(r);
  }
  auto r = cli.Get("/api/slices/tiny-mmq.json/index");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// Issue 31, item 9: a restarted server never listed the valid .partial a killed recorder left,
// and a kill during the final compression leaves a .gz.tmp beside it. The partial is listed and
// served once no writer holds it; the temporary never is; a partial a run still writes is not.
TEST_F(VizHardening, AKilledRunsPartialIsListedAndItsTemporariesAreNot) {
  json killed = json::parse(mmq_text);
  killed["complete"] = false;
  killed.erase("timings");
  write_file(traces.path() / "killed.json.gz.partial", killed.dump());
  write_file(traces.path() / "killed.json.gz.partial.gz.tmp", gz_bytes.substr(0, gz_bytes.size() / 2));
  write_file(traces.path() / "writing.json.partial", killed.dump());
  const int held = ::open((traces.path() / "writing.json.partial").c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);  // as a recorder holds the file it writes
  auto cli = client();
  const json entry = list_entry(cli, "killed.json.gz.partial");
  ASSERT_FALSE(entry.is_null()) << "the killed run's partial is not listed";
  EXPECT_FALSE(entry.contains("error") && !entry["error"].is_null()) << entry.dump();
  EXPECT_EQ(entry["complete"], false);
  EXPECT_TRUE(list_entry(cli, "killed.json.gz.partial.gz.tmp").is_null());
  EXPECT_TRUE(list_entry(cli, "writing.json.partial").is_null()) << "a partial a writer holds is listed";
  auto r = cli.Get("/api/traces/killed.json.gz.partial");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["complete"], false);
  r = cli.Get("/api/traces/killed.json.gz.partial.gz.tmp");
  ASSERT_TRUE(r);
  EXPECT_NE(r->status, 200);
  ::close(held);
  EXPECT_FALSE(list_entry(cli, "writing.json.partial").is_null()) << "once its writer is gone, it is listed";
}

// Issue 31, item 2 (related): a trace followed by a NUL byte and junk was listed, compared and
// sliced as valid; one with two "steps" keys was sliced from the first and validated from the
// last. Both are listed with their error, refused by /api/compare and by the slices.
TEST_F(VizHardening, TracesWithANulByteOrAKeyTwiceAreListedWithTheirErrorAndNotSliced) {
  ASSERT_EQ(mmq_text.back(), '}');
  write_file(traces.path() / "nul.json", mmq_text + std::string(1, '\0') + "the other writer's bytes");
  write_file(traces.path() / "nul-gz.json.gz", gzip_compress(mmq_text + std::string(4096, '\0'), 9));
  write_file(traces.path() / "two-steps.json", mmq_text.substr(0, mmq_text.size() - 1) + ",\"steps\":[]}");
  auto cli = client();
  const std::string nul_at = ": not valid JSON at byte " + std::to_string(mmq_text.size()) + ": a NUL byte";
  EXPECT_NE(list_entry(cli, "nul.json").value("error", "").find("nul.json" + nul_at), std::string::npos) << list_entry(cli, "nul.json");
  EXPECT_NE(list_entry(cli, "nul-gz.json.gz").value("error", "").find("nul-gz.json.gz" + nul_at), std::string::npos)
      << list_entry(cli, "nul-gz.json.gz");
  EXPECT_NE(list_entry(cli, "two-steps.json").value("error", "").find("the key 'steps' appears twice"), std::string::npos)
      << list_entry(cli, "two-steps.json");
  for (const char* name : {"nul.json", "nul-gz.json.gz", "two-steps.json"}) {
    auto r = cli.Get(std::string("/api/compare?a=tiny-mmq.json&b=") + name);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 422) << name << ": " << r->body;
    r = cli.Get(std::string("/api/slices/") + name + "/index");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 422) << name << ": " << r->body.substr(0, 300);
  }
  EXPECT_NE(error_text(cli.Get("/api/slices/two-steps.json/index")).find("the key 'steps' appears twice"), std::string::npos);
  EXPECT_NE(error_text(cli.Get("/api/slices/nul.json/index")).find("a NUL byte after the trace's JSON object"), std::string::npos);
}

// Defects 2, 3 and 9: what the reader refuses, the list shows as an error, and nothing
// inflates past the cap.
TEST_F(VizHardening, DeepBombedAndCorruptTracesAreListedWithTheirError) {
  TempDir dir("bombs");
  auto gz = [](const std::string& raw) { return gzip_compress(raw, 9); };
  write_file(dir.path() / "deep.json", "{\"format\":\"minfer-trace\",\"version\":2,\"meta\":" + std::string(100000, '['));
  write_file(dir.path() / "bomb.json.gz", gz(std::string(4 << 20, ' ')));  // 4 MB of text in 4 KB
  write_file(dir.path() / "trailing.json.gz", gz(mmq_text) + "garbage");
  write_file(dir.path() / "ok.json.gz", gz(mmq_text));
  write_file(dir.path() / "big.json", std::string(3 << 20, ' ') + mmq_text);  // plain, over the cap
  VizConfig config;
  config.traces_dirs = {dir.path().string()};
  config.max_trace_bytes = 2 << 20;
  RunningServer server(config);
  auto cli = server.client();
  cli.set_decompress(false);
  EXPECT_NE(list_entry(cli, "deep.json").value("error", "").find("deep.json: not valid JSON"), std::string::npos);
  EXPECT_NE(list_entry(cli, "deep.json").value("error", "").find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_NE(list_entry(cli, "bomb.json.gz").value("error", "").find("bomb.json.gz: the JSON text is larger than the limit of 2097152 bytes"),
            std::string::npos) << list_entry(cli, "bomb.json.gz");
  EXPECT_NE(list_entry(cli, "trailing.json.gz").value("error", "").find("unexpected bytes after the gzip data"),
            std::string::npos) << list_entry(cli, "trailing.json.gz");
  EXPECT_FALSE(list_entry(cli, "ok.json.gz").contains("error"));
  // Inflating for a client without gzip goes through the same cap.
  auto r = cli.Get("/api/traces/bomb.json.gz", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422);
  EXPECT_NE(error_text(r).find("larger than the limit"), std::string::npos) << error_text(r);
  r = cli.Get("/api/compare?a=bomb.json.gz&b=ok.json.gz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422);
  // A plain file over the cap is sent as stored, not compressed in memory.
  r = cli.Get("/api/traces/big.json", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Content-Encoding"));
  EXPECT_EQ(r->body.size(), (size_t(3) << 20) + mmq_text.size());
}

// Defect 7: Range is ignored: the whole body with 200, never a slice labelled 200, never a
// multipart body labelled gzip.
TEST_F(VizHardening, RangeRequestsGetTheWholeBody) {
  for (const std::string range : {"bytes=0-9", "bytes=0-9,20-29", "bytes=5000000-5000010", "bytes=-5"}) {
    RawResponse r = raw_request(port(), "GET /api/traces/tiny-mmq.json HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: " + range +
                                            "\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.status, 200) << range << "\n" << r.head;
    EXPECT_EQ(r.body, mmq_text) << range;
    EXPECT_EQ(r.head.find("Content-Range"), std::string::npos) << r.head;
    r = raw_request(port(), "GET /api/traces/tiny-mmq.json HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: " + range +
                                "\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.status, 200) << range << "\n" << r.head;
    EXPECT_EQ(r.head.find("multipart"), std::string::npos) << r.head;
    EXPECT_EQ(gzip_decompress(r.body, "body"), mmq_text) << range;
    r = raw_request(port(), "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: " + range + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.status, 200) << r.head;
    EXPECT_TRUE(json::parse(r.body)["ok"].get<bool>()) << r.body;
  }
}

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Defect 8: 40 connections that each trickle one header byte every 300 ms (more than a fixed
// pool has threads) do not keep /api/health from answering at once.
TEST_F(VizHardening, SlowClientsDoNotStarveHealth) {
  constexpr int kSlow = 40;
  std::atomic<bool> stop{false};
  std::vector<std::thread> slow;
  for (int i = 0; i < kSlow; ++i)
    slow.emplace_back([&] {
      const int fd = connect_loopback(port());
      const std::string req = "GET /api/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(200, 'a') + "\r\n\r\n";
      for (size_t k = 0; fd >= 0 && k < req.size() && !stop; ++k) {
        if (::send(fd, &req[k], 1, MSG_NOSIGNAL) != 1) break;
        for (int t = 0; t < 30 && !stop; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (fd >= 0) ::close(fd);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // all are connected and trickling
  httplib::Client cli("127.0.0.1", port());
  cli.set_connection_timeout(3, 0);
  cli.set_read_timeout(3, 0);
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = cli.Get("/api/health");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r) << "no answer from /api/health with " << kSlow << " slow clients connected";
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(s, 1.0);
  }
  stop = true;
  for (auto& t : slow) t.join();
}

// Defect 8: a connection that sends nothing is closed after the read timeout.
TEST(VizTimeouts, SilentConnectionsAreClosed) {
  TempDir traces("timeouts");
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  config.read_timeout = std::chrono::milliseconds(500);
  RunningServer server(config);
  const int fd = connect_loopback(server.port());
  ASSERT_GE(fd, 0);
  ::send(fd, "GET /api/he", 11, MSG_NOSIGNAL);  // and then nothing
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[512];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);  // 0: closed by the server
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  EXPECT_LE(n, 0) << "the server answered a half request";
  EXPECT_LT(s, 5.0) << "the silent connection stayed open " << s << " s";
}

}  // namespace
}  // namespace minfer::viz::test

namespace minfer::viz::test {
namespace {

// Issue 31, item 7: a client that left /api/compare before the answer left the server
// comparing two large traces to the end (8 s of CPU for two 51 MB traces here) and caching a
// result nobody asked for any more. The comparison now runs beside a connection that watches
// its client: the client leaves, the work stops (cancelled, nothing cached), and a client that
// waits still gets the whole comparison, streamed after the 200.
TEST(VizCompareCancel, AnAbandonedCompareStopsAndAPatientOneIsAnswered) {
  TempDir traces("compare-cancel");
  TraceSpec big;
  big.decode_steps = 400;
  big.width = 512;
  const std::string text = make_trace(big).dump();
  for (const char* name : {"a.json", "b.json"}) write_file(traces.path() / name, text);
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  config.compare_answer_wait = std::chrono::milliseconds(0);  // streamed at once
  RunningServer server(config);
  VizContext& ctx = server.server().context();

  const int fd = connect_loopback(server.port());
  ASSERT_GE(fd, 0);
  const std::string request =
      "GET /api/compare?a=a.json&b=b.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the comparison takes ~1 s here
  ::close(fd);
  const auto left = std::chrono::steady_clock::now();
  while (ctx.compares_cancelled == 0 && std::chrono::steady_clock::now() - left < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - left).count();
  EXPECT_EQ(ctx.compares_cancelled, 1u) << "the abandoned comparison was not stopped";
  EXPECT_EQ(ctx.bodies.bytes(), 0u) << "the abandoned comparison ran to its end";
  std::printf("[compare cancel] stopped %.2f s after its client left\n", s);

  auto cli = server.client();
  for (const char* encoding : {"identity", "gzip"}) {
    auto r = cli.Get("/api/compare?a=a.json&b=b.json", {{"Accept-Encoding", encoding}});
    ASSERT_TRUE(r) << encoding;
    EXPECT_EQ(r->status, 200) << encoding;
    const json cmp = json::parse(r->body);  // leading spaces (sent while it ran) are valid JSON
    EXPECT_EQ(cmp.value("steps_compared", 0), big.decode_steps + 1) << encoding << ": " << r->body.substr(0, 200);
    EXPECT_EQ(cmp.value("identical", false), true) << encoding;
  }
  EXPECT_EQ(ctx.compares_cancelled, 1u);
}

// After the 200 is sent, a comparison that fails answers its error as the body, with the
// status it would have had; the page shows `error` (web/src/model/compare.ts). With no wait
// before the answer starts, the comparison may still fail before the first byte goes out: then
// the answer is the plain 422 (both are what the page reads; which one is a race, not a rule).
TEST(VizCompareCancel, AnErrorAfterTheStreamedAnswerStartedIsItsBody) {
  TempDir traces("compare-late-error");
  TraceSpec mmq, other;
  other.model_file = "other-q4_0.gguf";
  other.model_sha = std::string(64, 'b');
  write_file(traces.path() / "mmq.json", make_trace(mmq).dump());
  write_file(traces.path() / "other.json", make_trace(other).dump());
  write_file(traces.path() / "broken.json", "{\"format\": \"minfer-trace\", \"version\": 2, \"meta\": ");
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  config.compare_answer_wait = std::chrono::milliseconds(0);
  RunningServer server(config);
  auto cli = server.client();
  for (const char* encoding : {"identity", "gzip"}) {
    auto r = cli.Get("/api/compare?a=mmq.json&b=other.json", {{"Accept-Encoding", encoding}});
    ASSERT_TRUE(r);
    ASSERT_TRUE(r->status == 200 || r->status == 422) << r->status;
    const json e = json::parse(r->body);
    EXPECT_NE(e.value("error", "").find("cannot compare traces of different models"), std::string::npos) << r->body;
    if (r->status == 200) EXPECT_EQ(e.value("status", 0), 422) << r->body;  // started, then failed
    r = cli.Get("/api/compare?a=mmq.json&b=broken.json", {{"Accept-Encoding", encoding}});
    ASSERT_TRUE(r);
    EXPECT_NE(json::parse(r->body).value("error", "").find("broken.json"), std::string::npos) << r->body;
  }
  EXPECT_EQ(server.server().context().compares_cancelled, 0u);
}

}  // namespace
}  // namespace minfer::viz::test
