// A served world for the live-run tests: minfer-viz with --model (the tiny generated model of
// the engine tests) and an empty traces directory the runs are saved into.
#pragma once
#include "test_models.h"
#include "viz_test_support.h"

namespace minfer::viz::test {

class VizLiveFixture : public ::testing::Test {
 public:  // the helpers are used by the tests' free functions too
  httplib::Client client() const { return server->client(); }

  // POST /api/run from this server's own page: same origin, JSON.
  httplib::Result start_run(httplib::Client& cli, int max_tokens = 1) const {
    const json body = {{"prompt", "hi"}, {"max_tokens", max_tokens}, {"temperature", 0}};
    return cli.Post("/api/run", {{"Origin", "http://127.0.0.1:" + std::to_string(server->port())}},
                    body.dump(), "application/json");
  }

 protected:
  void SetUp() override {
    model = minfer::testing::generated_model("viz-tiny", "tiny", GenWeights::Q8_0);
    MINFER_REQUIRE_MODEL(model);
    VizConfig config;
    config.traces_dirs = {traces.path().string()};
    config.models = {model};
    server = std::make_unique<RunningServer>(config);
  }
  void TearDown() override { server.reset(); }

  std::string model;
  TempDir traces{"live"};
  std::unique_ptr<RunningServer> server;
};

}  // namespace minfer::viz::test
