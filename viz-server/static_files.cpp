#include "static_files.h"

#include <map>

#include "file_bytes.h"
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
  res.set_content(read_file_bytes(file), mime_type_for(file));
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
