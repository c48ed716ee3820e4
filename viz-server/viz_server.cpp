#include "viz_server.h"

#include <csignal>
#include <cstdio>
#include <filesystem>

#include <sys/socket.h>

#include "api_routes.h"
#include "connection_threads.h"
#include "core/error.h"
#include "http_util.h"
#include "path_safety.h"
#include "request_guard.h"
#include "static_files.h"

namespace fs = std::filesystem;

namespace minfer::viz {
namespace {

// Requests whose target tries to step outside (encoded dots/slashes, "..", NUL, "//") are
// refused before any handler sees them.
httplib::Server::HandlerResponse refuse_suspicious(const httplib::Request& req,
                                                   httplib::Response& res) {
  if (raw_target_is_suspicious(req.target) || url_path_is_suspicious(req.path)) {
    send_error(res, 400, "refused request path (traversal, encoded separators or NUL)");
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// Range requests are ignored: every answer is the whole body with 200, which RFC 9110 allows.
// httplib 0.11 applies the parsed ranges to whatever a handler answers (keeping our 200 on a
// 10-byte slice, no 416, a wrong Content-Range and a "gzip" label on multipart bodies), and
// nothing here needs partial bodies: the API serves JSON documents read whole. The Request is
// httplib's own mutable object, handed to us as const; clearing its ranges before routing is
// the only hook this httplib offers.
void ignore_ranges(const httplib::Request& req) {
  const_cast<httplib::Request&>(req).ranges.clear();
}

// Every error answer is JSON, including the ones httplib produces itself (no route, bad
// request line).
httplib::Server::HandlerResponse json_error_body(const httplib::Request&, httplib::Response& res) {
  if (!res.body.empty() || res.content_length_ > 0) return httplib::Server::HandlerResponse::Unhandled;
  send_error(res, res.status, status_reason(res.status));
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

VizServer::VizServer(const VizConfig& config)
    : config_(config), ctx_(config.traces_dirs, config.max_trace_bytes) {
  ctx_.max_steps = config.max_steps;
  ctx_.compare_answer_wait = config.compare_answer_wait;
  if (!config.web_dir.empty()) {
    std::error_code ec;
    fs::path root = fs::canonical(config.web_dir, ec);
    if (ec || !fs::is_directory(root, ec)) fail("minfer-viz: --web ", config.web_dir, ": not a directory");
    ctx_.web_root = root;
  }
  const size_t threads = config.threads, max_threads = config.max_threads;
  server_.new_task_queue = [threads, max_threads] { return new ConnectionThreads(threads, max_threads); };
  server_.set_read_timeout(config.read_timeout);
  server_.set_write_timeout(config.write_timeout);
  server_.set_keep_alive_timeout(config.keep_alive_timeout.count());
  // httplib's default also sets SO_REUSEPORT, which would let a second minfer-viz share a
  // busy port silently; SO_REUSEADDR alone still allows a quick restart.
  server_.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_.set_keep_alive_max_count(100);
  server_.set_payload_max_length(1 << 20);  // the API takes no uploads
  server_.set_pre_routing_handler([guard = RequestGuard(config.host)](const httplib::Request& req,
                                                                      httplib::Response& res) {
    ignore_ranges(req);
    if (auto refusal = guard.check(req)) {
      send_error(res, refusal->status, refusal->message);
      // Refused before its body is read: the unread body must not be taken for the next
      // request on this connection.
      res.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    }
    return refuse_suspicious(req, res);
  });
  server_.set_error_handler(httplib::Server::HandlerWithResponse(json_error_body));
  server_.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                   std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr, "minfer-viz: 500: %s\n", what.c_str());
    res.headers.clear();
    send_error(res, 500, what);
  });

  ctx_.models = config.models;
  ctx_.engine = config.engine;
  ctx_.digest_cache_dir = config.digest_cache_dir;
  register_api_routes(server_, ctx_);
  server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    if (!ctx_.web_root) {
      send_error(res, 404, "no web app is served (start minfer-viz with --web DIR); the API is under /api/");
      return;
    }
    send_static_file(req, res, *ctx_.web_root);
  });
}

VizServer::~VizServer() { stop(); }

int VizServer::bind() {
  // A client that disconnects mid-download must cost a failed write, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  if (config_.port == 0) {
    port_ = server_.bind_to_any_port(config_.host);
    if (port_ < 0) fail("minfer-viz: cannot listen on ", config_.host, " (any port)");
  } else {
    if (!server_.bind_to_port(config_.host, config_.port))
      fail("minfer-viz: cannot listen on ", config_.host, ":", config_.port,
           " (address in use, not local, or not permitted)");
    port_ = config_.port;
  }
  return port_;
}

void VizServer::run() {
  if (port_ < 0) fail("minfer-viz: run() before bind()");
  server_.listen_after_bind();
}

int VizServer::start() {
  int port = bind();
  thread_ = std::thread([this] { run(); });
  for (int i = 0; i < 5000 && !server_.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!server_.is_running()) fail("minfer-viz: the server did not start listening");
  return port;
}

void VizServer::stop() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

std::string VizServer::url() const {
  bool v6 = config_.host.find(':') != std::string::npos;
  std::string host = v6 ? "[" + config_.host + "]" : config_.host;
  return "http://" + host + ":" + std::to_string(port_) + "/";
}

}  // namespace minfer::viz
