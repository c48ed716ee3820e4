#include "static_files.h"

#include <map>
#include <memory>
#include <mutex>

#include "file_bytes.h"
#include "gzip_codec.h"
#include "trace_response.h"
#include "http_util.h"
#include "path_safety.h"

namespace fs = std::filesystem;

namespace minfer::viz {
namespace {

bool last_segment_has_dot(const std::string& path) {
  size_t slash = path.rfind('/');
  return path.find('.', slash == std::string::npos ? 0 : slash) != std::string::npos;
}

void send_file(const httplib::Request& req, httplib::Response& res, const fs::path& file,
               bool immutable) {
  std::error_code ec;
  uint64_t size = fs::file_size(file, ec);
  auto mtime = fs::last_write_time(file, ec);
  std::string etag = file_etag(
      size, std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count());
  res.set_header("ETag", etag);
  // Vite fingerprints everything under /assets/; the rest (index.html) must revalidate.
  res.set_header("Cache-Control", immutable ? "public, max-age=31536000, immutable" : "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  if (etag_matches(req, etag)) {
    res.status = 304;
    return;
  }
  res.status = 200;
  const std::string mime = mime_type_for(file);
  // Compress text assets once and keep them: left to httplib, the JS bundle was compressed
  // with brotli at its highest quality on every request (~0.4 s on 2 cores: most of a cold
  // first paint).
  const bool text = mime.rfind("text/", 0) == 0 || mime.find("javascript") != std::string::npos ||
                    mime.find("json") != std::string::npos || mime.find("svg") != std::string::npos;
  if (text && size > 1024 && accepts_gzip(req)) {
    static std::mutex mu;
    static std::map<std::string, Body> cache;  // path + etag → gzip body (a few small assets)
    const std::string key = file.string() + "|" + etag;
    Body body;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = cache.find(key);
      if (it != cache.end()) body = it->second;
    }
    if (!body) {
      body = std::make_shared<const std::string>(gzip_compress(read_file_bytes(file), 6));
      std::lock_guard<std::mutex> lock(mu);
      if (cache.size() > 64) cache.clear();
      cache[key] = body;
    }
    res.set_header("Content-Encoding", "gzip");
    res.set_header("Vary", "Accept-Encoding");
    send_body(res, body, mime);
    return;
  }
  res.set_content(read_file_bytes(file), mime);
}

}  // namespace

std::string mime_type_for(const fs::path& file) {
  static const std::map<std::string, std::string> types = {
      {".html", "text/html; charset=utf-8"},
      {".htm", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".ico", "image/x-icon"},
      {".woff", "font/woff"},
      {".woff2", "font/woff2"},
      {".ttf", "font/ttf"},
      {".wasm", "application/wasm"},
      {".webmanifest", "application/manifest+json"},
  };
  std::string ext = file.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = types.find(ext);
  return it != types.end() ? it->second : "application/octet-stream";
}

void send_static_file(const httplib::Request& req, httplib::Response& res,
                      const fs::path& web_root) {
  const std::string& path = req.path;
  std::string relative = path.size() > 1 ? path.substr(1) : "";
  if (!relative.empty() && relative.back() == '/') relative += "index.html";
  if (relative.empty()) relative = "index.html";
  if (auto file = resolve_inside(web_root, relative)) {
    send_file(req, res, *file, relative.rfind("assets/", 0) == 0);
    return;
  }
  // Client-side routes (no extension) get the app; a missing asset is a real 404.
  if (!last_segment_has_dot(path)) {
    if (auto index = resolve_inside(web_root, "index.html")) {
      send_file(req, res, *index, false);
      return;
    }
  }
  send_error(res, 404, "not found: " + path);
}

}  // namespace minfer::viz
