#include "trace_slices.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "gzip_codec.h"
#include "format/trace_input.h"
#include "format/trace_keys.h"
#include "http_util.h"
#include "path_safety.h"
#include "request_limits.h"
#include "trace_response.h"
#include "viz_context.h"

namespace minfer::viz {
namespace {

struct Scanner {
  std::string_view s;
  const std::string& what;
  size_t i = 0;

  [[noreturn]] void bad(const char* problem) const { fail(what, ": ", problem, " at byte ", i); }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  void expect(char c) {
    ws();
    if (i >= s.size() || s[i] != c) bad(c == ':' ? "expected ':'" : c == '{' ? "expected '{'" : "unexpected character");
    ++i;
  }
  std::string_view string() {
    ws();
    if (i >= s.size() || s[i] != '"') bad("expected a string");
    size_t b = ++i;
    while (i < s.size() && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
    if (i >= s.size()) bad("unterminated string");
    return s.substr(b, i++ - b);
  }
  // Skips one value; returns its [begin, end).
  std::pair<size_t, size_t> value() {
    ws();
    size_t b = i;
    if (i >= s.size()) bad("truncated");
    if (s[i] == '"') { string(); return {b, i}; }
    if (s[i] == '{' || s[i] == '[') {
      int depth = 0;
      while (i < s.size()) {
        char c = s[i];
        if (c == '"') { string(); continue; }
        if (c == '{' || c == '[') ++depth;
        if (c == '}' || c == ']') { if (--depth == 0) { ++i; return {b, i}; } }
        ++i;
      }
      bad("truncated object or array");
    }
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n') ++i;
    return {b, i};
  }
  // Iterates the members of an object; f(key) must consume the value. A key written twice, or
  // with an escape ("st\u0065ps" is "steps" to a JSON parser), is refused: this scan and the
  // parsers that read the whole file (the validator, the page) must see the same members.
  template <class F> void members(F f) {
    expect('{');
    ws();
    if (i < s.size() && s[i] == '}') { ++i; return; }
    std::vector<std::string_view> few;
    std::unordered_set<std::string_view> many;
    for (;;) {
      std::string_view key = string();
      if (key.find('\\') != std::string_view::npos) bad("a key written with an escape");
      bool repeated = false;
      if (few.size() < 32) {
        repeated = std::find(few.begin(), few.end(), key) != few.end();
        few.push_back(key);
      } else {
        if (many.empty()) many.insert(few.begin(), few.end());
        repeated = !many.insert(key).second;
      }
      if (repeated) fail(what, ": the key '", key, "' appears twice in one object at byte ", i);
      expect(':');
      f(key);
      ws();
      if (i < s.size() && s[i] == ',') { ++i; continue; }
      expect('}');
      return;
    }
  }
};

std::string identity(const TraceEntry& f) {
  return f.path.string() + "|" + std::to_string(f.size) + "|" + std::to_string(f.mtime_ns);
}

// The scanned text of the latest few files (a 7B trace is scanned once, not per step).
struct Scanned {
  std::string text;
  TraceLayout layout;
};
// Namespace-scope, before the warmer below: destroyed after it has joined its thread.
std::mutex mu;
std::map<std::string, std::shared_ptr<const Scanned>> cache;

std::shared_ptr<const Scanned> scanned(const TraceEntry& file, const trace::ReadOptions& read, uint64_t max_steps) {
  const std::string key = identity(file) + "|" + std::to_string(max_steps);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto sc = std::make_shared<Scanned>();
  sc->text = trace::read_trace_text(file.path.string(), read);  // inflated, within the server's cap
  sc->layout = scan_trace_layout(sc->text, file.name, max_steps);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 3) cache.erase(cache.begin());
  cache[key] = sc;
  return sc;
}

// Scans the largest traces in the background when the server starts, so the first page that
// opens one does not wait for the scan (a 50 MB trace takes a few hundred ms on 2 cores).
class Warmer {
 public:
  void start(std::vector<std::pair<TraceEntry, trace::ReadOptions>> files, uint64_t max_steps) {
    if (thread_.joinable()) return;
    thread_ = std::thread([this, files = std::move(files), max_steps] {
      for (const auto& [f, read] : files) {
        if (stop_) return;
        try { scanned(f, read, max_steps); } catch (const std::exception&) { /* reported when requested */ }
      }
    });
  }
  ~Warmer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};
Warmer warmer;

void send_cached(const httplib::Request& req, httplib::Response& res, VizContext& ctx,
                 const std::string& key, const std::function<std::string()>& make) {
  Body body = ctx.bodies.get(key, make);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Vary", "Accept-Encoding");
  if (accepts_gzip(req) && body->size() > 4096) {
    res.set_header("Content-Encoding", "gzip");
    send_body(res, ctx.bodies.get(key + "|gzip", [&] { return gzip_compress(*body, 1); }), "application/json");
  } else {
    send_body(res, body, "application/json");
  }
}

void handle_slice(const httplib::Request& req, httplib::Response& res, VizContext& ctx) {
  const std::string name = req.matches[1].str(), part = req.matches[2].str();
  if (!is_plain_file_name(name) || !has_trace_suffix(name)) {
    send_error(res, 400, "slices: '" + name + "' is not a trace file name (a *.json or *.json.gz name, no path)");
    return;
  }
  auto file = ctx.traces.find(name);
  if (!file) { send_error(res, 404, "slices: no trace named '" + name + "'"); return; }
  try {
    auto sc = scanned(*file, ctx.traces.read_options(*file), ctx.max_steps);
    if (sc->layout.version != 2 && sc->layout.version != 3) {
      // "version": the page reads a version-1 file whole; any other refusal it shows (api.ts).
      res.set_header("Cache-Control", "no-store");
      send_json(res,
                {{"error", "slices: " + name + " is a version-" + std::to_string(sc->layout.version) +
                               " trace; per-step slices exist for versions 2 and 3 (load the whole file)"},
                 {"version", sc->layout.version}},
                422);
      return;
    }
    const std::string base = "slice|" + identity(*file) + "|";
    if (part == "index") {  // trace-keys: a part of the slice URL
      send_cached(req, res, ctx, base + part, [&] { return slice_index(sc->text, sc->layout); });
      return;
    }
    const std::string k = part.substr(6);  // "steps/K"
    size_t step = 0;
    if (k.empty() || k.size() > 9 || k.find_first_not_of("0123456789") != std::string::npos ||
        (step = std::stoul(k)) >= sc->layout.steps.size()) {
      send_error(res, 404, "slices: " + name + " has no step '" + k + "' (" +
                               std::to_string(sc->layout.steps.size()) + " steps)");
      return;
    }
    send_cached(req, res, ctx, base + k, [&] { return slice_step(sc->text, sc->layout, step); });
  } catch (const LimitExceeded& e) {
    res.headers.clear();
    send_error(res, 413, e.what());
  } catch (const Error& e) {
    res.headers.clear();
    send_error(res, 422, e.what());
  }
}

}  // namespace

TraceLayout scan_trace_layout(std::string_view text, const std::string& what, uint64_t max_steps) {
  Scanner sc{text, what};
  TraceLayout out;
  bool have_steps = false;
  sc.members([&](std::string_view key) {
    if (key == trace::keys::document::kVersion) {
      auto [b, e] = sc.value();
      out.version = std::atoi(std::string(text.substr(b, e - b)).c_str());
    } else if (key == trace::keys::document::kSteps) {
      have_steps = true;
      sc.expect('[');
      sc.ws();
      if (sc.i < text.size() && text[sc.i] == ']') { ++sc.i; return; }
      for (;;) {
        if (out.steps.size() == max_steps)
          throw LimitExceeded(what + " has more than " + std::to_string(max_steps) +
                              " steps, the most this server slices or compares in one trace (start minfer-viz with "
                              "--max-steps N to raise it)");
        StepRanges r;
        sc.members([&](std::string_view k) {
          auto range = sc.value();
          if (k == trace::keys::step::kNodes) r.nodes = range;
          else if (k == trace::keys::step::kKernels) r.kernels = range;
        });
        out.steps.push_back(r);
        sc.ws();
        if (sc.i < text.size() && text[sc.i] == ',') { ++sc.i; continue; }
        sc.expect(']');
        return;
      }
    } else {
      sc.value();
    }
  });
  if (!have_steps && out.version >= 2) fail(what, ": field '", trace::keys::document::kSteps, "' is missing");
  sc.ws();
  if (sc.i < text.size()) sc.bad(text[sc.i] == '\0' ? "a NUL byte after the trace's JSON object" : "bytes after the trace's JSON object");
  return out;
}

std::string slice_index(std::string_view text, const TraceLayout& layout) {
  std::vector<std::pair<size_t, size_t>> cut;
  for (const auto& s : layout.steps) {
    if (s.nodes.second > s.nodes.first) cut.push_back(s.nodes);
    if (s.kernels.second > s.kernels.first) cut.push_back(s.kernels);
  }
  std::sort(cut.begin(), cut.end());
  std::string out;
  size_t at = 0;
  for (auto [b, e] : cut) {
    out.append(text.substr(at, b - at));
    out.append("null");
    at = e;
  }
  out.append(text.substr(at));
  return out;
}

std::string slice_step(std::string_view text, const TraceLayout& layout, size_t step) {
  const StepRanges& r = layout.steps.at(step);
  auto part = [&](std::pair<size_t, size_t> p) {
    return p.second > p.first ? std::string(text.substr(p.first, p.second - p.first)) : std::string("[]");
  };
  auto key = [](const char* k) { return std::string(",\"") + k + "\":"; };
  return "{\"step\":" + std::to_string(step) + key(trace::keys::step::kNodes) + part(r.nodes) +
         key(trace::keys::step::kKernels) + part(r.kernels) + "}";
}

void check_step_limit(const TraceEntry& file, VizContext& ctx) {
  scanned(file, ctx.traces.read_options(file), ctx.max_steps);
}

void register_slice_routes(httplib::Server& server, VizContext& ctx) {
  std::vector<TraceEntry> files = ctx.traces.files();
  std::sort(files.begin(), files.end(), [](const TraceEntry& a, const TraceEntry& b) { return a.size > b.size; });
  if (files.size() > 3) files.resize(3);  // the cache holds three
  std::vector<std::pair<TraceEntry, trace::ReadOptions>> warm;
  for (const auto& f : files) warm.emplace_back(f, ctx.traces.read_options(f));
  warmer.start(std::move(warm), ctx.max_steps);
  server.Get(R"(/api/slices/([^/]+)/(index|steps/[^/]*))",
             [&ctx](const auto& req, auto& res) { handle_slice(req, res, ctx); });
}

}  // namespace minfer::viz
