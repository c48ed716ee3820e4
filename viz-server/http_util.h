// Small HTTP helpers shared by the handlers: JSON bodies, JSON errors, content negotiation
// and validators.
#pragma once
#include <cstdint>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace minfer::viz {

// A JSON body with the given status. "application/json" lets httplib compress it for
// clients that accept gzip/br.
void send_json(httplib::Response& res, const nlohmann::json& body, int status = 200);

// {"error": message} with the given status (400, 404, 422, 500 ...).
void send_error(httplib::Response& res, int status, const std::string& message);

// "Not Found" etc. for the statuses this server answers with.
std::string status_reason(int status);

// True when Accept-Encoding lists gzip (or *) without q=0.
bool accepts_gzip(const httplib::Request& req);

// A weak validator for a file version: W/"<size>-<mtime ns>" (hex).
std::string file_etag(uint64_t size, int64_t mtime_ns);

// True when If-None-Match holds `etag` (weak comparison) or "*".
bool etag_matches(const httplib::Request& req, const std::string& etag);

}  // namespace minfer::viz
