// A served world for the API tests: two trace directories (valid traces, a gzipped one, a
// broken one, a v1 one, a symlink pointing outside), a web app, and a secret outside both.
#pragma once
#include "viz_test_support.h"

namespace minfer::viz::test {

inline const std::string kSecretMarker = "TOP-SECRET-MARKER-5b1e";

class VizFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    TraceSpec mmq;
    mmq_text = make_trace(mmq).dump();
    write_file(traces.path() / "tiny-mmq.json", mmq_text);

    TraceSpec f16 = mmq;
    f16.matmul_path = "f16";
    f16.noise = 0.01f;
    f16.diverge_from_node = 5;
    f16_text = make_trace(f16).dump();
    write_file(traces.path() / "tiny-f16.json", f16_text);

    gz_bytes = gzip_compress(mmq_text);
    write_file(traces.path() / "tiny-mmq-copy.json.gz", gz_bytes);

    TraceSpec other = mmq;
    other.model_file = "other-q4_0.gguf";
    other.model_sha = std::string(64, 'b');
    other.width = 32;
    write_file(traces.path() / "other-model.json", make_trace(other).dump());

    write_file(traces.path() / "broken.json", "{\"format\": \"minfer-trace\", \"version\": 2, \"meta\": ");
    write_file(traces.path() / "notes.txt", "not a trace");
    write_file(traces.path() / "legacy-v1.json",
               json{{"format", "minfer-trace"},
                    {"version", 1},
                    {"phases",
                     {{{"kind", "prefill"}, {"graph", {{"nodes", json::array()}}},
                       {"steps", {{{"token", 1}, {"text", "a"}, {"nodes", json::array()}}}}},
                      {{"kind", "decode"}, {"graph", {{"nodes", json::array()}}},
                       {"steps", {{{"token", 2}, {"text", "b"}, {"nodes", json::array()}},
                                  {{"token", 3}, {"text", "c"}, {"nodes", json::array()}}}}}}}}
                   .dump());

    // Outside every served directory.
    json secret = make_trace(mmq);
    secret["meta"]["prompt"] = kSecretMarker;
    write_file(outside.path() / "outside.json", secret.dump());
    write_file(outside.path() / "secret.txt", kSecretMarker);
    fs::create_symlink(outside.path() / "outside.json", traces.path() / "escape.json");

    TraceSpec fresh = mmq;
    fresh.decode_steps = 1;
    write_file(fresh_dir.path() / "fresh.json", make_trace(fresh).dump());
    write_file(fresh_dir.path() / "tiny-mmq.json", "{}");  // shadowed by the first directory

    write_file(web.path() / "index.html", "<!doctype html><title>minfer</title><div id=app></div>");
    write_file(web.path() / "assets" / "app-abc123.js", "console.log('minfer');");
    write_file(web.path() / "style.css", "body{margin:0}");
    write_file(web.path() / "logo.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>");
    fs::create_symlink(outside.path() / "secret.txt", web.path() / "leak.html");

    VizConfig config;
    config.traces_dirs = {traces.path().string(), fresh_dir.path().string()};
    config.web_dir = web.path().string();
    server = std::make_unique<RunningServer>(config);
  }

  void TearDown() override { server.reset(); }

  int port() const { return server->port(); }
  httplib::Client client() const { return server->client(); }

  TempDir traces{"traces"}, fresh_dir{"fresh"}, web{"web"}, outside{"outside"};
  std::string mmq_text, f16_text, gz_bytes;
  std::unique_ptr<RunningServer> server;
};

}  // namespace minfer::viz::test
