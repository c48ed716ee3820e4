// Path attacks sent as raw bytes (an HTTP client library would normalize most of them):
// nothing outside the served directories comes back, and each answer is a refusal.
#include <gtest/gtest.h>

#include "core/error.h"
#include "viz_fixture.h"

namespace minfer::viz::test {
namespace {

using VizSecurity = VizFixture;

void expect_refused(int port, const std::string& target) {
  RawResponse r = raw_get(port, target);
  EXPECT_TRUE(r.status == 400 || r.status == 404) << target << " -> " << r.head;
  EXPECT_EQ(r.body.find(kSecretMarker), std::string::npos) << target;
  EXPECT_EQ(r.body.find("root:"), std::string::npos) << target;
  if (r.status == 400 || r.status == 404) {
    EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos) << r.head;
    EXPECT_TRUE(json::parse(r.body).contains("error")) << target << ": " << r.body;
  }
}

TEST_F(VizSecurity, TraversalInStaticPathsIsRefused) {
  std::string out_name = outside.path().filename().string();
  for (const std::string& target : std::vector<std::string>{"/../../../../../../etc/passwd", "/../" + out_name + "/secret.txt",
        "/assets/../../" + out_name + "/secret.txt", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/%2E%2E/" + out_name + "/secret.txt", "/.%2e/.%2e/etc/passwd",
        "/assets%2f..%2f..%2fetc%2fpasswd", "/..%5c..%5cetc%5cpasswd", "/..\\..\\etc\\passwd",
        "//etc/passwd", "/" + outside.path().string() + "/secret.txt",
        "/index.html%00.png", "/leak.html", "/./index.html/../../etc/passwd",
        "http://127.0.0.1/../../etc/passwd"})
    expect_refused(port(), target);
}

TEST_F(VizSecurity, TraversalInTraceNamesIsRefused) {
  std::string out_name = outside.path().filename().string();
  for (const std::string& target : std::vector<std::string>{"/api/traces/../" + out_name + "/outside.json",
        "/api/traces/..%2f" + out_name + "%2foutside.json",
        "/api/traces/%2e%2e%2f" + out_name + "%2foutside.json",
        "/api/traces/%2E%2E/%2E%2E/etc/passwd", "/api/traces/" + outside.path().string() + "/outside.json",
        "/api/traces/%2F" + outside.path().string().substr(1) + "%2Foutside.json",
        "/api/traces/escape.json", "/api/traces/tiny-mmq.json%00", "/api/traces/..",
        "/api/traces/..%5coutside.json",
        "/api/compare?a=../" + out_name + "/outside.json&b=tiny-mmq.json",
        "/api/compare?a=..%2f" + out_name + "%2foutside.json&b=tiny-mmq.json",
        "/api/compare?a=escape.json&b=tiny-mmq.json",
        "/api/compare?a=" + outside.path().string() + "/outside.json&b=tiny-mmq.json",
        "/api/compare?a=tiny-mmq.json%00&b=tiny-mmq.json"})
    expect_refused(port(), target);
}

TEST_F(VizSecurity, SymlinkLeavingTheDirectoryIsNotListed) {
  RawResponse r = raw_get(port(), "/api/traces");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body.find("escape.json"), std::string::npos);
  EXPECT_EQ(r.body.find(kSecretMarker), std::string::npos);
}

TEST_F(VizSecurity, SymlinkStayingInsideIsServed) {
  fs::create_symlink(traces.path() / "tiny-mmq.json", traces.path() / "alias.json");
  RawResponse r = raw_get(port(), "/api/traces/alias.json");
  EXPECT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.body, mmq_text);
}

TEST_F(VizSecurity, MalformedRequestLinesGetJsonErrors) {
  RawResponse r = raw_request(port(), "GARBAGE\r\n\r\n");
  EXPECT_EQ(r.status, 400) << r.head;
  r = raw_request(port(), "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status, 200) << r.head;  // and the server is still fine
}

TEST(VizBind, DefaultsToLoopback) {
  TempDir traces("bind");
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  config.port = 0;
  VizServer server(config);
  server.bind();
  EXPECT_EQ(server.url().rfind("http://127.0.0.1:", 0), 0u) << server.url();
}

TEST(VizBind, BusyPortIsAClearError) {
  TempDir traces("busy");
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  RunningServer first(config);
  config.port = first.port();
  VizServer second(config);
  try {
    second.bind();
    FAIL() << "bound a busy port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace minfer::viz::test
