// The JSON API and the static web app through a real client against an in-process server.
#include <gtest/gtest.h>

#include "core/build_stamp.h"
#include "viz_fixture.h"

namespace minfer::viz::test {
namespace {

json entry_named(const json& list, const std::string& name) {
  for (const json& e : list)
    if (e["name"] == name) return e;
  return nullptr;
}

void expect_json_error(const httplib::Result& r, int status, const std::string& fragment) {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  json body = json::parse(r->body);
  ASSERT_TRUE(body.contains("error")) << r->body;
  EXPECT_NE(body["error"].get<std::string>().find(fragment), std::string::npos) << r->body;
}

using VizApi = VizFixture;

TEST_F(VizApi, Health) {
  auto cli = client();
  auto r = cli.Get("/api/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  json h = json::parse(r->body);
  EXPECT_TRUE(h["ok"].get<bool>());
  EXPECT_EQ(h["version"], MINFER_VERSION);
  EXPECT_EQ(h["traces_dirs"], 2);
  // No absolute paths of the server's machine in the answer.
  EXPECT_EQ(r->body.find(traces.path().string()), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("/tmp"), std::string::npos) << r->body;
}

TEST_F(VizApi, ListsEveryTraceWithSummaryAndBrokenOnesWithTheirError) {
  auto cli = client();
  auto r = cli.Get("/api/traces");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json list = json::parse(r->body);
  std::vector<std::string> names;
  for (const json& e : list) names.push_back(e["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"broken.json", "fresh.json", "legacy-v1.json",
                                             "other-model.json", "tiny-f16.json",
                                             "tiny-mmq-copy.json.gz", "tiny-mmq.json"}));

  json mmq = entry_named(list, "tiny-mmq.json");
  EXPECT_EQ(mmq["size"], mmq_text.size());
  EXPECT_EQ(mmq["model"], "tiny-q8_0.gguf");
  EXPECT_EQ(mmq["architecture"], "qwen2");  // the family the trace list shows
  EXPECT_EQ(mmq["backend"], "cpu");
  EXPECT_EQ(mmq["matmul_path"], "mmq");
  EXPECT_EQ(mmq["steps"], 4);
  // 5 prompt tokens; every step (prefill included) samples one: 4 generated.
  EXPECT_EQ(mmq["tokens"], 5 + 4);
  EXPECT_EQ(mmq["recorded_at"], "2026-01-02T03:04:05Z");
  EXPECT_EQ(mmq["complete"], true);
  EXPECT_FALSE(mmq.contains("error"));

  json gz = entry_named(list, "tiny-mmq-copy.json.gz");
  EXPECT_EQ(gz["size"], gz_bytes.size());
  EXPECT_EQ(gz["steps"], 4);
  EXPECT_EQ(entry_named(list, "tiny-f16.json")["matmul_path"], "f16");
  EXPECT_EQ(entry_named(list, "fresh.json")["steps"], 2);
  json v1 = entry_named(list, "legacy-v1.json");
  EXPECT_EQ(v1["version"], 1);
  EXPECT_EQ(v1["steps"], 3);

  json broken = entry_named(list, "broken.json");
  ASSERT_TRUE(broken.contains("error"));
  EXPECT_NE(broken["error"].get<std::string>().find("broken.json: not valid JSON"), std::string::npos)
      << broken.dump();
  EXPECT_EQ(broken["complete"], false);
}

TEST_F(VizApi, ListFollowsChangesOnDisk) {
  auto cli = client();
  ASSERT_EQ(json::parse(cli.Get("/api/traces")->body).size(), 7u);
  TraceSpec later;
  later.decode_steps = 6;
  write_file(traces.path() / "later.json", make_trace(later).dump());
  fs::remove(traces.path() / "broken.json");
  json list = json::parse(cli.Get("/api/traces")->body);
  EXPECT_EQ(list.size(), 7u);
  EXPECT_EQ(entry_named(list, "later.json")["steps"], 7);
  EXPECT_TRUE(entry_named(list, "broken.json").is_null());
  // Rewriting a file in place (new size) re-summarizes it.
  later.decode_steps = 2;
  write_file(traces.path() / "later.json", make_trace(later).dump());
  EXPECT_EQ(entry_named(json::parse(cli.Get("/api/traces")->body), "later.json")["steps"], 3);
}

TEST_F(VizApi, FetchPlainWithoutGzipIsTheFileBytes) {
  auto cli = client();
  cli.set_decompress(false);
  auto r = cli.Get("/api/traces/tiny-mmq.json", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, mmq_text);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_FALSE(r->has_header("Content-Encoding"));
  EXPECT_FALSE(r->get_header_value("ETag").empty());
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");
  EXPECT_EQ(r->get_header_value("Vary"), "Accept-Encoding");
}

TEST_F(VizApi, FetchWithGzipIsCompressedAndInflatesToTheFile) {
  auto cli = client();
  cli.set_decompress(false);
  auto r = cli.Get("/api/traces/tiny-mmq.json", {{"Accept-Encoding", "gzip, deflate"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "gzip");
  ASSERT_TRUE(looks_gzipped(r->body));
  EXPECT_LT(r->body.size(), mmq_text.size());
  EXPECT_EQ(gzip_decompress(r->body, "response"), mmq_text);
  // q=0 refuses gzip.
  auto plain = cli.Get("/api/traces/tiny-mmq.json", {{"Accept-Encoding", "gzip;q=0"}});
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->has_header("Content-Encoding"));
  EXPECT_EQ(plain->body, mmq_text);
}

TEST_F(VizApi, GzippedFilesAreServedAsIsOrInflated) {
  auto cli = client();
  cli.set_decompress(false);
  auto gz = cli.Get("/api/traces/tiny-mmq-copy.json.gz", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->status, 200);
  EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(gz->body, gz_bytes);  // as stored, not recompressed
  EXPECT_EQ(gz->get_header_value("Content-Type"), "application/json");

  auto plain = cli.Get("/api/traces/tiny-mmq-copy.json.gz", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200);
  EXPECT_FALSE(plain->has_header("Content-Encoding"));
  EXPECT_EQ(plain->body, mmq_text);
}

TEST_F(VizApi, ETagRevalidationGives304UntilTheFileChanges) {
  auto cli = client();
  auto first = cli.Get("/api/traces/tiny-f16.json");
  ASSERT_TRUE(first);
  std::string etag = first->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto again = cli.Get("/api/traces/tiny-f16.json", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  EXPECT_EQ(again->get_header_value("ETag"), etag);
  // A list of validators, and the gzip variant, match too.
  auto listed = cli.Get("/api/traces/tiny-f16.json",
                        {{"If-None-Match", "\"nope\", " + etag}, {"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->status, 304);
  auto stale = cli.Get("/api/traces/tiny-f16.json", {{"If-None-Match", "W/\"0-0\""}});
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 200);

  TraceSpec changed;
  changed.decode_steps = 5;
  std::string text = make_trace(changed).dump();
  write_file(traces.path() / "tiny-f16.json", text);
  auto after = cli.Get("/api/traces/tiny-f16.json", {{"If-None-Match", etag}});
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(after->body, text);
  EXPECT_NE(after->get_header_value("ETag"), etag);
}

TEST_F(VizApi, CompareReturnsTheRecorderDiff) {
  auto cli = client();
  auto r = cli.Get("/api/compare?a=tiny-mmq.json&b=tiny-f16.json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  json d = json::parse(r->body);
  ASSERT_TRUE(d.contains("steps")) << r->body.substr(0, 400);
  EXPECT_EQ(d["steps"].size(), 4u);
  EXPECT_TRUE(d.contains("first_divergent"));
  ASSERT_FALSE(d["first_divergent"].is_null()) << r->body.substr(0, 400);
  EXPECT_GE(d["first_divergent"]["node"].get<int>(), 5);  // the perturbation starts at node 5
  EXPECT_EQ(d["token_agreement"], 1.0);

  // Same trace against its gzipped copy: identical, no divergence.
  auto same = cli.Get("/api/compare?a=tiny-mmq.json&b=tiny-mmq-copy.json.gz");
  ASSERT_TRUE(same);
  ASSERT_EQ(same->status, 200) << same->body;
  EXPECT_TRUE(json::parse(same->body)["first_divergent"].is_null());
}

TEST_F(VizApi, CompareErrors) {
  auto cli = client();
  expect_json_error(cli.Get("/api/compare?a=tiny-mmq.json&b=other-model.json"), 422, "");
  auto mismatch = cli.Get("/api/compare?a=tiny-mmq.json&b=other-model.json");
  std::string msg = json::parse(mismatch->body)["error"];
  EXPECT_TRUE(msg.find("model") != std::string::npos || msg.find("graph") != std::string::npos)
      << msg;
  expect_json_error(cli.Get("/api/compare?a=tiny-mmq.json&b=broken.json"), 422, "broken.json");
  expect_json_error(cli.Get("/api/compare?a=tiny-mmq.json"), 400, "a=NAME and b=NAME");
  expect_json_error(cli.Get("/api/compare?a=tiny-mmq.json&b=missing.json"), 404, "missing.json");
  expect_json_error(cli.Get("/api/compare?a=../outside.json&b=tiny-mmq.json"), 400,
                    "not a trace file name");
}

TEST_F(VizApi, NotFoundAndBadRequestsAreJson) {
  auto cli = client();
  expect_json_error(cli.Get("/api/traces/missing.json"), 404, "no trace named 'missing.json'");
  expect_json_error(cli.Get("/api/traces/notes.txt"), 400, "not a trace file name");
  expect_json_error(cli.Get("/api/nothing-here"), 404, "no such API endpoint");
  expect_json_error(cli.Get("/missing.js"), 404, "not found");
  expect_json_error(cli.Post("/api/traces", "x", "text/plain"), 404, "not found");
}

// The page (web/src/io/api.ts) reads a trace whole only when its slices refusal says there are
// none to have: a version-1 trace (422 with "version": 1) or a server without the routes (a 404
// not starting "slices:"). Everything else it shows, so these answers must keep telling them apart.
TEST_F(VizApi, SliceRefusalsSayWhenThePageMayReadTheFileWhole) {
  auto cli = client();
  auto v1 = cli.Get("/api/slices/legacy-v1.json/index");
  expect_json_error(v1, 422, "version-1 trace");
  EXPECT_EQ(json::parse(v1->body)["version"], 1) << v1->body;
  auto broken = cli.Get("/api/slices/broken.json/index");
  expect_json_error(broken, 422, "broken.json");
  EXPECT_FALSE(json::parse(broken->body).contains("version")) << broken->body;
  for (const char* url : {"/api/slices/missing.json/index", "/api/slices/tiny-mmq.json/steps/99"}) {
    auto r = cli.Get(url);
    expect_json_error(r, 404, "");
    EXPECT_EQ(json::parse(r->body)["error"].get<std::string>().rfind("slices: ", 0), 0u) << url << ": " << r->body;
  }
  auto other = cli.Get("/api/slices-of-another-kind");
  expect_json_error(other, 404, "no such API endpoint");
}

TEST_F(VizApi, StaticFilesWithMimeTypesAndSpaFallback) {
  auto cli = client();
  auto index = cli.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<title>minfer</title>"), std::string::npos);
  EXPECT_EQ(index->get_header_value("Cache-Control"), "no-cache");

  auto js = cli.Get("/assets/app-abc123.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js->body, "console.log('minfer');");
  EXPECT_NE(js->get_header_value("Cache-Control").find("immutable"), std::string::npos);
  EXPECT_EQ(cli.Get("/style.css")->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(cli.Get("/logo.svg")->get_header_value("Content-Type"), "image/svg+xml");

  auto route = cli.Get("/compare/tiny-mmq");  // a client-side route
  ASSERT_TRUE(route);
  EXPECT_EQ(route->status, 200);
  EXPECT_EQ(route->body, index->body);
  EXPECT_EQ(cli.Get("/missing.png")->status, 404);

  std::string etag = js->get_header_value("ETag");
  EXPECT_EQ(cli.Get("/assets/app-abc123.js", {{"If-None-Match", etag}})->status, 304);
}

TEST(VizApiNoWeb, ApiOnlyServerExplainsTheMissingWebApp) {
  TempDir traces("noweb");
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  RunningServer server(config);
  auto cli = server.client();
  auto r = cli.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("--web"), std::string::npos);
  EXPECT_EQ(json::parse(cli.Get("/api/traces")->body), json::array());
}

}  // namespace
}  // namespace minfer::viz::test
