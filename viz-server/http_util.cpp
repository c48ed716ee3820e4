#include "http_util.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <sstream>
#include <string_view>

namespace minfer::viz {
namespace {

std::string trim_lower(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  if (b == std::string_view::npos) return "";
  std::string out(s.substr(b, e - b + 1));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Splits a comma-separated header value into trimmed items.
std::vector<std::string> header_items(const std::string& value) {
  std::vector<std::string> items;
  std::stringstream ss(value);
  for (std::string item; std::getline(ss, item, ',');) {
    std::string t = trim_lower(item);
    if (!t.empty()) items.push_back(t);
  }
  return items;
}

std::string strip_weak(std::string_view tag) {
  if (tag.size() >= 2 && (tag.substr(0, 2) == "w/" || tag.substr(0, 2) == "W/")) tag.remove_prefix(2);
  return std::string(tag);
}

}  // namespace

void send_json(httplib::Response& res, const nlohmann::json& body, int status) {
  res.status = status;
  // Replace invalid UTF-8 (a token text cut mid-character) rather than throwing.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.set_header("Cache-Control", "no-store");
  send_json(res, nlohmann::json{{"error", message}}, status);
}

std::string status_reason(int status) {
  switch (status) {
    case 400: return "bad request";
    case 403: return "forbidden";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 413: return "payload too large";
    case 414: return "URI too long";
    case 415: return "unsupported media type";
    case 416: return "range not satisfiable";
    case 422: return "unprocessable content";
    case 500: return "internal server error";
    default: return "HTTP status " + std::to_string(status);
  }
}

bool accepts_gzip(const httplib::Request& req) {
  for (const std::string& item : header_items(req.get_header_value("Accept-Encoding"))) {
    size_t semi = item.find(';');
    std::string coding = trim_lower(std::string_view(item).substr(0, semi));
    if (coding != "gzip" && coding != "x-gzip" && coding != "*") continue;
    if (semi == std::string::npos) return true;
    std::string params = item.substr(semi + 1);
    size_t q = params.find("q=");
    if (q == std::string::npos) return true;
    return std::strtod(params.c_str() + q + 2, nullptr) > 0.0;
  }
  return false;
}

std::string file_etag(uint64_t size, int64_t mtime_ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "W/\"%llx-%llx\"", static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(mtime_ns));
  return buf;
}

bool etag_matches(const httplib::Request& req, const std::string& etag) {
  if (!req.has_header("If-None-Match")) return false;
  std::string want = strip_weak(etag);
  std::stringstream ss(req.get_header_value("If-None-Match"));
  for (std::string item; std::getline(ss, item, ',');) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    std::string tag = item.substr(b, e - b + 1);
    if (tag == "*" || strip_weak(tag) == want) return true;
  }
  return false;
}

}  // namespace minfer::viz
