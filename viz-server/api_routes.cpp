#include "api_routes.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "compare_job.h"
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

void set_compare_headers(httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Vary", "Accept-Encoding");
}

// A finished comparison, as a normal answer: the body (gzip-encoded once, cached) or the
// error with its status.
void send_compare_result(const httplib::Request& req, httplib::Response& res, VizContext& ctx,
                         const std::string& key, CompareJob& job) {
  try {
    Body body = job.result();
    set_compare_headers(res);
    if (accepts_gzip(req) && body->size() > 1024) {
      res.set_header("Content-Encoding", "gzip");
      send_body(res, ctx.bodies.get(key + "|gzip", [&] { return gzip_compress(*body); }), "application/json");
    } else {
      send_body(res, body, "application/json");
    }
  } catch (const LimitExceeded& e) {
    send_error(res, 413, e.what());
  } catch (const Error& e) {  // different models/graphs, a trace that does not parse
    send_error(res, 422, e.what());
  }
}

// A comparison still running after ctx.compare_answer_wait: answered 200 now and streamed,
// so that the connection can watch its client. Until the body is ready a space goes out every
// second (JSON allows whitespace before the value; httplib compresses the stream when the
// client accepts it) and every poll asks the socket whether the client is still there (closed:
// httplib's is_writable peeks at it). A client that left cancels the work, which stops at its
// next check and frees what it loaded. An error found after the 200 is the body:
// {"error": "...", "status": 422} (the page shows `error` whatever the status).
void stream_compare(httplib::Response& res, std::shared_ptr<CompareJob> job) {
  using Clock = std::chrono::steady_clock;
  auto last_sent = std::make_shared<Clock::time_point>(Clock::now());
  res.status = 200;
  set_compare_headers(res);
  res.set_chunked_content_provider(
      "application/json",
      [job, last_sent](size_t, httplib::DataSink& sink) {
        if (!job->wait_for(std::chrono::milliseconds(100))) {
          if (!sink.is_writable()) {  // the client left (or stopped reading for the write timeout)
            job->cancel();
            return false;
          }
          if (Clock::now() - *last_sent >= std::chrono::seconds(1)) {
            *last_sent = Clock::now();
            if (!sink.write(" ", 1)) {
              job->cancel();
              return false;
            }
          }
          return true;
        }
        Body body;
        nlohmann::json error;
        try {
          body = job->result();
        } catch (const LimitExceeded& e) {
          error = {{"error", e.what()}, {"status", 413}};
        } catch (const Error& e) {
          error = {{"error", e.what()}, {"status", 422}};
        } catch (const trace::Cancelled&) {
          return false;  // the server is stopping
        } catch (const std::exception& e) {
          error = {{"error", e.what()}, {"status", 500}};
        }
        if (!body)
          body = std::make_shared<const std::string>(
              error.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        constexpr size_t kPiece = size_t(1) << 18;  // httplib copies each write into one chunk
        for (size_t at = 0; at < body->size(); at += kPiece)
          if (!sink.write(body->data() + at, std::min(kPiece, body->size() - at))) return false;
        sink.done();
        return true;
      },
      [job](bool) { job->cancel(); });  // an answer ended early (client gone, server stopping)
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
  } catch (const LimitExceeded& e) {
    send_error(res, 413, e.what());
    return;
  } catch (const Error& e) {
    send_error(res, 422, e.what());
    return;
  }
  // On its own thread, so a client that leaves can stop it (stream_compare). A cached result
  // comes back at once.
  auto job = std::make_shared<CompareJob>([&ctx, a = *a, b = *b, key](const trace::CancelFlag& cancel) {
    try {
      return ctx.bodies.get(key, [&] { return compare_traces_json(ctx.traces, a, b, &cancel); }, &cancel);
    } catch (const trace::Cancelled&) {
      ++ctx.compares_cancelled;
      throw;
    }
  });
  if (job->wait_for(ctx.compare_answer_wait)) send_compare_result(req, res, ctx, key, *job);
  else stream_compare(res, std::move(job));
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
