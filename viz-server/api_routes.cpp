#include "api_routes.h"

#include "compare_traces.h"
#include "core/build_stamp.h"
#include "core/error.h"
#include "gzip_codec.h"
#include "http_util.h"
#include "path_safety.h"
#include "trace_response.h"
#include "trace_slices.h"
#include "live_runs.h"

using nlohmann::json;

namespace minfer::viz {
namespace {

// No paths: where the server's files live is not the client's business.
void handle_health(const httplib::Request&, httplib::Response& res, VizContext& ctx) {
  res.set_header("Cache-Control", "no-store");
  send_json(res, json{{"ok", true},
                      {"version", MINFER_VERSION},
                      {"commit", MINFER_GIT_COMMIT},
                      {"traces_dirs", ctx.traces.dirs().size()},
                      {"web", ctx.web_root.has_value()}});
}

void handle_list(const httplib::Request&, httplib::Response& res, VizContext& ctx) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Vary", "Accept-Encoding");  // httplib compresses JSON bodies (gzip/br)
  send_json(res, ctx.traces.list());
}

// Resolves a trace name from the URL or a query parameter, or answers the error itself.
std::optional<TraceEntry> lookup(httplib::Response& res, VizContext& ctx, const std::string& name,
                                const char* what) {
  if (!is_plain_file_name(name) || !has_trace_suffix(name)) {
    send_error(res, 400, std::string(what) + ": '" + name +
                             "' is not a trace file name (a *.json or *.json.gz name, no path)");
    return std::nullopt;
  }
  auto file = ctx.traces.find(name);
  if (!file) send_error(res, 404, std::string(what) + ": no trace named '" + name + "'");
  return file;
}

void handle_fetch(const httplib::Request& req, httplib::Response& res, VizContext& ctx) {
  auto file = lookup(res, ctx, req.matches[1].str(), "trace");
  if (!file) return;
  try {
    send_trace_file(req, res, *file, ctx.traces.read_options(*file), ctx.bodies);
  } catch (const Error& e) {  // a .json.gz that does not inflate
    res.headers.clear();
    send_error(res, 422, e.what());
  }
}

std::string identity(const TraceEntry& f) {
  return f.path.string() + "|" + std::to_string(f.size) + "|" + std::to_string(f.mtime_ns);
}

void handle_compare(const httplib::Request& req, httplib::Response& res, VizContext& ctx) {
  if (!req.has_param("a") || !req.has_param("b")) {
    send_error(res, 400, "compare: both query parameters a=NAME and b=NAME are required");
    return;
  }
  auto a = lookup(res, ctx, req.get_param_value("a"), "compare: a");
  if (!a) return;
  auto b = lookup(res, ctx, req.get_param_value("b"), "compare: b");
  if (!b) return;
  std::string key = "compare|" + identity(*a) + "|" + identity(*b);
  try {
    check_step_limit(*a, ctx);
    check_step_limit(*b, ctx);
    Body body = ctx.bodies.get(key, [&] { return compare_traces_json(ctx.traces, *a, *b); });
    res.set_header("Cache-Control", "no-cache");
    res.set_header("Vary", "Accept-Encoding");
    if (accepts_gzip(req) && body->size() > 1024) {
      res.set_header("Content-Encoding", "gzip");
      send_body(res, ctx.bodies.get(key + "|gzip", [&] { return gzip_compress(*body); }),
                "application/json");
    } else {
      send_body(res, body, "application/json");
    }
  } catch (const LimitExceeded& e) {
    send_error(res, 413, e.what());
  } catch (const Error& e) {  // different models/graphs, a trace that does not parse
    send_error(res, 422, e.what());
  }
}

}  // namespace

void register_api_routes(httplib::Server& server, VizContext& ctx) {
  server.Get("/api/health", [&ctx](const auto& req, auto& res) { handle_health(req, res, ctx); });
  server.Get("/api/traces/?", [&ctx](const auto& req, auto& res) { handle_list(req, res, ctx); });
  server.Get("/api/traces/(.+)", [&ctx](const auto& req, auto& res) { handle_fetch(req, res, ctx); });
  server.Get("/api/compare", [&ctx](const auto& req, auto& res) { handle_compare(req, res, ctx); });
  register_slice_routes(server, ctx);  // /api/slices/NAME/index, /api/slices/NAME/steps/K
  register_live_routes(server, ctx);   // /api/run…, /api/vocab (with --model)
  server.Get("/api(/.*)?", [](const httplib::Request& req, httplib::Response& res) {
    send_error(res, 404, "no such API endpoint: " + req.path);
  });
}

}  // namespace minfer::viz
