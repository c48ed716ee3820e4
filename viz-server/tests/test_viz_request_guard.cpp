// Web pages on other sites cannot drive minfer-viz: requests naming another Host (DNS
// rebinding) are refused, so are cross-origin state-changing requests and run requests whose
// body is not declared JSON. The page's own requests, and curl's, keep working.
#include <gtest/gtest.h>

#include "core/error.h"
#include "request_guard.h"
#include "viz_live_fixture.h"

namespace minfer::viz::test {
namespace {

using VizRequestGuard = VizLiveFixture;

// ----- the rule on its own ---------------------------------------------------------------

httplib::Request request(const std::string& method, const std::string& path, const httplib::Headers& headers) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = headers;
  return req;
}

int status_of(const RequestGuard& g, const httplib::Request& req) {
  auto refusal = g.check(req);
  return refusal ? refusal->status : 0;
}

TEST(RequestGuardRule, HostsOfALoopbackServer) {
  RequestGuard g("127.0.0.1");
  for (const char* ok : {"localhost", "localhost:8080", "LOCALHOST:8080", "localhost.", "127.0.0.1",
                         "127.0.0.1:1", "[::1]", "[::1]:8080"})
    EXPECT_TRUE(g.host_allowed(ok)) << ok;
  for (const char* bad : {"", "evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io",
                          "10.0.0.1", "[::2]:80", "::1", "127.0.0.1:", "127.0.0.1:80x", "127.0.0.1:123456",
                          "[::1", "localhost:8080@evil.example", "0.0.0.0:8080"})
    EXPECT_FALSE(g.host_allowed(bad)) << bad;
}

TEST(RequestGuardRule, BoundAddressIsAllowed) {
  RequestGuard lan("192.168.1.7"), named("MyBox.lan"), v6("[fd00::7]");
  EXPECT_TRUE(lan.host_allowed("192.168.1.7:8080"));
  EXPECT_TRUE(lan.host_allowed("localhost:8080"));
  EXPECT_FALSE(lan.host_allowed("192.168.1.8:8080"));
  EXPECT_TRUE(named.host_allowed("mybox.lan:8080"));
  EXPECT_FALSE(named.host_allowed("evil.example:8080"));
  EXPECT_TRUE(v6.host_allowed("[FD00::7]:8080"));
  // Every interface: any address of the machine, never a name of another site.
  for (const char* any : {"0.0.0.0", "::", "[::]"}) {
    RequestGuard g(any);
    EXPECT_TRUE(g.host_allowed("192.168.1.7:8080")) << any;
    EXPECT_TRUE(g.host_allowed("[fd00::7]:8080")) << any;
    EXPECT_FALSE(g.host_allowed("evil.example:8080")) << any;
  }
}

TEST(RequestGuardRule, ReadsPassWithAnyOriginStateChangesNeedTheirOwn) {
  RequestGuard g("127.0.0.1");
  const httplib::Headers json_type = {{"Host", "127.0.0.1:8080"}, {"Content-Type", "application/json"}};
  auto with = [&](httplib::Headers h, const std::string& k, const std::string& v) { h.emplace(k, v); return h; };
  EXPECT_EQ(status_of(g, request("GET", "/api/traces", {{"Host", "127.0.0.1:8080"}, {"Origin", "https://evil.example"}})), 0);
  EXPECT_EQ(status_of(g, request("GET", "/api/traces", {{"Host", "evil.example:8080"}})), 403);
  EXPECT_EQ(status_of(g, request("GET", "/api/traces", {})), 400);  // HTTP/1.1 requires a Host
  EXPECT_EQ(status_of(g, request("POST", "/api/run", json_type)), 0);  // curl
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with(json_type, "Origin", "http://127.0.0.1:8080"))), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with(json_type, "Sec-Fetch-Site", "same-origin"))), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with(json_type, "Sec-Fetch-Site", "none"))), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run",
                                 {{"Host", "localhost"}, {"Origin", "http://localhost"}, {"Content-Type", "application/json"}})), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run",
                                 {{"Host", "localhost"}, {"Origin", "http://localhost:80"}, {"Content-Type", "application/json"}})), 0);
  // Behind a TLS-terminating proxy the page is https: the same host and port are still it.
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with(json_type, "Origin", "https://127.0.0.1:8080"))), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run",
                                 {{"Host", "localhost"}, {"Origin", "https://localhost"}, {"Content-Type", "application/json"}})), 0);
  for (const char* origin : {"https://evil.example", "http://127.0.0.1:9090", "https://127.0.0.1", "http://localhost:8080",
                             "null", "file://", "chrome-extension://abc", "127.0.0.1:8080", "http://127.0.0.1:8080.evil.example"})
    EXPECT_EQ(status_of(g, request("POST", "/api/run", with(json_type, "Origin", origin))), 403) << origin;
  for (const char* method : {"PUT", "DELETE", "PATCH"})
    EXPECT_EQ(status_of(g, request(method, "/api/run/cancel", with(json_type, "Origin", "https://evil.example"))), 403) << method;
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with(json_type, "Sec-Fetch-Site", "cross-site"))), 403);
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with(json_type, "Sec-Fetch-Site", "same-site"))), 403);
  EXPECT_EQ(status_of(g, request("POST", "/api/run", {{"Origin", "http://127.0.0.1:8080"}, {"Content-Type", "application/json"}})), 400);
}

TEST(RequestGuardRule, RunBodiesMustBeDeclaredJson) {
  RequestGuard g("127.0.0.1");
  const httplib::Headers host = {{"Host", "127.0.0.1:8080"}};
  auto with = [&](std::initializer_list<std::pair<const std::string, std::string>> extra) {
    httplib::Headers h = host;
    h.insert(extra);
    return h;
  };
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with({{"Content-Type", "application/json"}}))), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run", with({{"Content-Type", " Application/JSON ; charset=utf-8"}}))), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run", host)), 415);  // it takes a body: declare it
  for (const char* type : {"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                           "multipart/form-data; boundary=x", "application/jsonp", "application/json-seq"})
    EXPECT_EQ(status_of(g, request("POST", "/api/run", with({{"Content-Type", type}}))), 415) << type;
  // Cancel reads no body, whatever is sent (cross-site senders are refused by their Origin).
  EXPECT_EQ(status_of(g, request("POST", "/api/run/cancel", host)), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run/cancel", with({{"Content-Type", "application/json"}}))), 0);
  EXPECT_EQ(status_of(g, request("POST", "/api/run/cancel", with({{"Content-Type", "text/plain"}}))), 0);
  EXPECT_EQ(status_of(g, request("GET", "/api/run", host)), 0);
  auto refusal = g.check(request("POST", "/api/run", with({{"Content-Type", "text/plain"}})));
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->message,
            "POST /api/run: the body must be JSON sent as Content-Type: application/json (got 'text/plain')");
}

// ----- served -----------------------------------------------------------------------------

RawResponse get_with_host(int port, const std::string& target, const std::string& host) {
  return raw_request(port, "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
}

std::string error_of(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  return j.is_object() && j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : "";
}

// No run was started: the server says so.
void expect_no_run(httplib::Client& cli) {
  auto r = cli.Get("/api/run/models");
  ASSERT_TRUE(r);
  json j = json::parse(r->body);
  EXPECT_EQ(j["run"], nullptr) << r->body;
  EXPECT_EQ(j["busy"], false) << r->body;
}

TEST_F(VizRequestGuard, ForeignHostIsRefused) {
  const std::string p = std::to_string(server->port());
  for (const std::string& host : std::vector<std::string>{"evil.example:" + p, "evil.example", "127.0.0.1.evil.example:" + p,
                                  "localhost.evil.example", "10.0.0.1:" + p, "[::2]:" + p})
    for (const char* target : {"/api/health", "/api/traces", "/api/run/models", "/"}) {
      RawResponse r = get_with_host(server->port(), target, host);
      EXPECT_EQ(r.status, 403) << "Host '" << host << "' " << target << " -> " << r.head;
      EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos) << r.head;
      EXPECT_NE(error_of(r.body).find("Host"), std::string::npos) << r.body;
    }
}

TEST_F(VizRequestGuard, MissingHostIsABadRequest) {
  for (const std::string& request : {std::string("GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n"),
                                     std::string("GET /api/health HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n"),
                                     std::string("GET /api/health HTTP/1.0\r\n\r\n")}) {
    RawResponse r = raw_request(server->port(), request);
    EXPECT_EQ(r.status, 400) << r.head;
    EXPECT_NE(error_of(r.body).find("no Host header"), std::string::npos) << r.body;
  }
}

TEST_F(VizRequestGuard, LoopbackHostsAreServed) {
  const std::string p = std::to_string(server->port());
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + p, "127.0.0.1", "localhost:" + p, "localhost", "LocalHost:" + p,
                                  "[::1]:" + p, "[::1]", "localhost:9999" /* an ssh tunnel's port */}) {
    RawResponse r = get_with_host(server->port(), "/api/health", host);
    EXPECT_EQ(r.status, 200) << "Host '" << host << "' -> " << r.head;
  }
  auto cli = client();  // httplib sends Host: 127.0.0.1:PORT
  auto r = cli.Get("/api/traces");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(VizRequestGuard, CrossOriginRunIsRefusedAndStartsNothing) {
  auto cli = client();
  const json body = {{"prompt", "hi"}, {"max_tokens", 1}};
  const std::string other_port = std::to_string(server->port() == 9 ? 10 : 9);
  for (const httplib::Headers& h : std::vector<httplib::Headers>{
           {{"Origin", "https://evil.example"}},
           {{"Origin", "http://evil.example:" + std::to_string(server->port())}},
           {{"Origin", "http://127.0.0.1:" + other_port}},  // another local site
           {{"Origin", "http://localhost:" + std::to_string(server->port())}},  // not the Host asked for
           {{"Origin", "null"}},
           {{"Sec-Fetch-Site", "cross-site"}},
           {{"Sec-Fetch-Site", "same-site"}}}) {
    for (const char* path : {"/api/run", "/api/run/cancel"}) {
      auto r = cli.Post(path, h, body.dump(), "application/json");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 403) << path << " " << h.begin()->first << ": " << h.begin()->second << " -> " << r->body;
      EXPECT_NE(error_of(r->body).find("cross-origin"), std::string::npos) << r->body;
    }
  }
  expect_no_run(cli);
}

TEST_F(VizRequestGuard, SameOriginJsonRunIsAccepted) {
  auto cli = client();
  const std::string origin = "http://127.0.0.1:" + std::to_string(server->port());
  auto r = cli.Post("/api/run", {{"Origin", origin}, {"Sec-Fetch-Site", "same-origin"}},
                    json{{"prompt", "hi"}, {"max_tokens", 1}}.dump(), "application/json; charset=utf-8");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  auto c = cli.Post("/api/run/cancel", {{"Origin", origin}}, "{}", "application/json");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200) << c->body;
}

TEST_F(VizRequestGuard, RunWithoutOriginIsAccepted) {  // curl, scripts
  auto cli = client();
  auto r = cli.Post("/api/run", json{{"prompt", "hi"}, {"max_tokens", 1}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  auto c = cli.Post("/api/run/cancel");  // no body: no content type needed
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200) << c->body;
}

TEST_F(VizRequestGuard, RunBodyThatIsNotDeclaredJsonIsRefused) {
  auto cli = client();
  const std::string body = json{{"prompt", "hi"}, {"max_tokens", 1}}.dump();
  for (const char* type : {"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                           "multipart/form-data; boundary=x", "application/jsonp"}) {
    auto r = cli.Post("/api/run", body, type);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 415) << type << " -> " << r->body;
    EXPECT_NE(error_of(r->body).find("application/json"), std::string::npos) << r->body;
  }
  auto none = cli.Post("/api/run", httplib::Headers{}, body, "");  // no Content-Type at all
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 415) << none->body;
  expect_no_run(cli);
}

// A refused request's body is not left on the connection for the next request to trip on.
TEST_F(VizRequestGuard, RefusedPostKeepsTheConnectionUsable) {
  auto cli = client();
  cli.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    auto r = cli.Post("/api/run", std::string(3000, 'x'), "text/plain");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 415);
    auto h = cli.Get("/api/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200) << h->body;
  }
}

// --host ADDR: the bound address is a name the server answers to.
TEST(VizRequestGuardHost, BoundAddressIsAnAllowedHost) {
  TempDir traces("guard-host");
  VizConfig config;
  config.traces_dirs = {traces.path().string()};
  config.host = "127.0.0.2";  // a loopback address other than 127.0.0.1
  config.port = 0;
  VizServer server(config);
  int port = 0;
  try {
    port = server.start();
  } catch (const Error&) {
    GTEST_SKIP() << "cannot bind 127.0.0.2 here";
  }
  httplib::Client cli("127.0.0.2", port);  // Host: 127.0.0.2:PORT
  auto r = cli.Get("/api/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  auto evil = cli.Get("/api/health", {{"Host", "evil.example"}});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 403) << evil->body;
}

}  // namespace
}  // namespace minfer::viz::test
