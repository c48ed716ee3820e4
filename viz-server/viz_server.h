// minfer-viz as an object: the httplib server, its routes and its shared state. main() and
// the tests both drive it through this class.
#pragma once
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "format/trace_input.h"
#include "viz_context.h"

namespace minfer::viz {

struct VizConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0 = any free port
  std::vector<std::string> traces_dirs;
  std::string web_dir;                // "" = API only
  std::vector<std::string> models;    // --model files: live runs
  EngineOptions engine;               // the live runs' engine (main: EngineOptions::from_env)
  std::string digest_cache_dir;       // the live runs' model digests (trace::digest_cache_dir; "" none)
  size_t threads = 8;                 // threads kept ready for connections
  size_t max_threads = 256;           // connections served at once (more wait in a queue)
  uint64_t max_trace_bytes = trace::kDefaultMaxTraceBytes;  // JSON text read from one trace
  uint64_t max_steps = kDefaultMaxSteps;  // steps of one trace sliced or compared (request_limits.h)
  // /api/compare answers within this with the result or its error status; a comparison that
  // takes longer is answered 200 and streamed, its client watched (VizContext).
  std::chrono::milliseconds compare_answer_wait{1000};
  // A connection that sends nothing (reading) or takes nothing (writing) for this long is
  // closed; so is an idle keep-alive connection.
  std::chrono::milliseconds read_timeout{5000}, write_timeout{5000};
  std::chrono::seconds keep_alive_timeout{5};
};

class VizServer {
 public:
  // Checks the directories (minfer::Error when one is missing) and registers the routes.
  explicit VizServer(const VizConfig& config);
  ~VizServer();  // stops and joins

  // Binds the listening socket; returns the port (the chosen one when config.port == 0).
  // Throws minfer::Error when the address cannot be bound.
  int bind();
  // Serves until stop(); call after bind().
  void run();
  // bind() + run() on a background thread; returns the port.
  int start();
  void stop();

  int port() const { return port_; }
  std::string url() const;  // http://HOST:PORT/
  VizContext& context() { return ctx_; }

 private:
  VizConfig config_;
  VizContext ctx_;
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

}  // namespace minfer::viz
