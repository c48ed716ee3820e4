#include "request_guard.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace minfer::viz {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

struct Authority {
  std::string host;  // lower case, without brackets or a final dot
  int port = -1;     // -1: none given
};

// "name", "name:port", "[v6]", "[v6]:port"; nullopt when malformed.
std::optional<Authority> parse_authority(std::string_view s) {
  Authority a;
  std::string_view rest;
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    a.host = lower(s.substr(1, close - 1));
    rest = s.substr(close + 1);
  } else {
    size_t colon = s.find(':');
    a.host = lower(s.substr(0, colon));
    if (colon != std::string_view::npos) rest = s.substr(colon);
  }
  if (!rest.empty()) {
    std::string_view digits = rest.substr(1);
    if (rest[0] != ':' || digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    a.port = std::atoi(std::string(digits).c_str());
  }
  if (!a.host.empty() && a.host.back() == '.') a.host.pop_back();  // "localhost." is localhost
  if (a.host.empty()) return std::nullopt;
  return a;
}

bool is_ip_literal(const std::string& host) {
  in6_addr buf;
  return ::inet_pton(AF_INET, host.c_str(), &buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), &buf) == 1;
}

bool is_unspecified_address(const std::string& host) {
  in_addr v4;
  in6_addr v6;
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return v4.s_addr == 0;
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_UNSPECIFIED(&v6);
  return host.empty();
}

// GET, HEAD and OPTIONS only read; everything else may change state (start, cancel a run).
bool changes_state(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

// True when `origin` ("scheme://host[:port]") is the origin of a page served under `host`
// (the request's Host header): same host, same port once defaults are filled in.
bool same_origin(const std::string& origin, const std::string& host) {
  size_t sep = origin.find("://");
  if (sep == std::string::npos) return false;  // "null" (sandboxed frames, file://) and junk
  const std::string scheme = lower(std::string_view(origin).substr(0, sep));
  if (scheme != "http" && scheme != "https") return false;
  auto o = parse_authority(std::string_view(origin).substr(sep + 3));
  auto h = parse_authority(host);
  if (!o || !h) return false;
  // A Host without a port is the default port of the scheme the page was loaded with (a
  // TLS-terminating proxy in front serves the page as https).
  const int default_port = scheme == "https" ? 443 : 80;
  return o->host == h->host &&
         (o->port < 0 ? default_port : o->port) == (h->port < 0 ? default_port : h->port);
}

// The endpoints that read a JSON body (a new one belongs here).
bool takes_json_body(const httplib::Request& req) {
  return req.method == "POST" && req.path == "/api/run";
}

}  // namespace

RequestGuard::RequestGuard(std::string bound_host) {
  if (bound_host.size() >= 2 && bound_host.front() == '[' && bound_host.back() == ']')
    bound_host = bound_host.substr(1, bound_host.size() - 2);
  bound_ = lower(bound_host);
  wildcard_ = is_unspecified_address(bound_);
}

bool RequestGuard::host_allowed(std::string_view host_header) const {
  auto a = parse_authority(host_header);
  if (!a) return false;
  const std::string& h = a->host;
  if (h == "localhost" || h == "127.0.0.1" || h == "::1" || h == bound_) return true;
  // Bound to every interface, the server is reached by any address of this machine. An IP
  // literal cannot be rebound: a page with that Host is one the user opened there.
  return wildcard_ && is_ip_literal(h);
}

std::optional<Refusal> RequestGuard::check(const httplib::Request& req) const {
  // HTTP/1.1 requires a Host (RFC 9112: 400 without one); the check below depends on it.
  if (!req.has_header("Host") || req.get_header_value("Host").empty())
    return Refusal{400, "refused: the request has no Host header (minfer-viz checks it against DNS rebinding)"};
  const std::string host = req.get_header_value("Host");
  if (!host_allowed(host))
    return Refusal{403, "refused: Host '" + host + "' does not name this server (minfer-viz answers to "
                        "localhost, 127.0.0.1, [::1] and the address it is bound to; a page of another "
                        "site reaching it through DNS rebinding is refused)"};
  if (!changes_state(req.method)) return std::nullopt;

  const std::string what = req.method + " " + req.path;
  const std::string site = lower(trim(req.get_header_value("Sec-Fetch-Site")));
  if (site == "cross-site" || site == "same-site")
    return Refusal{403, "refused: cross-origin " + what + " (Sec-Fetch-Site: " + site +
                            "); only this server's own page may start or cancel runs"};
  if (req.has_header("Origin")) {
    const std::string origin = trim(req.get_header_value("Origin"));
    if (!same_origin(origin, host))
      return Refusal{403, "refused: cross-origin " + what + " from '" + origin + "' to Host '" + host +
                              "'; only this server's own page may start or cancel runs"};
  }

  if (takes_json_body(req)) {
    const std::string type = req.get_header_value("Content-Type");
    const std::string media = lower(trim(std::string_view(type).substr(0, type.find(';'))));
    if (media != "application/json")
      return Refusal{415, what + ": the body must be JSON sent as Content-Type: application/json (got " +
                              (type.empty() ? std::string("no Content-Type") : "'" + type + "'") + ")"};
  }
  return std::nullopt;
}

}  // namespace minfer::viz
