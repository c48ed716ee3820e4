// The built web app: files under --web DIR, index.html at "/", and the single-page-app
// fallback (a path without a dot in its last segment gets index.html).
#pragma once
#include <filesystem>
#include <string>

#include <httplib.h>

namespace minfer::viz {

// MIME type by file extension; application/octet-stream when unknown.
std::string mime_type_for(const std::filesystem::path& file);

// Serves req.path from `web_root` (canonical); 404 JSON for anything missing or outside.
void send_static_file(const httplib::Request& req, httplib::Response& res,
                      const std::filesystem::path& web_root);

}  // namespace minfer::viz
