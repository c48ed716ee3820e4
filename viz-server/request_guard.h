// Which requests minfer-viz answers at all. It binds a local address, but any web page the
// user opens can send it requests: through DNS rebinding (a name of the page's own site that
// resolves to 127.0.0.1: the browser then lets the page read the answers) or as cross-site
// requests that start and cancel runs. The rule, applied before routing:
//   - Host must be there (400) and name this server: localhost, 127.0.0.1, [::1] or the bound
//     address, any port (an ssh tunnel or the dev proxy changes it); with a wildcard bind
//     (0.0.0.0, ::) any IP literal too. A name of another site is a rebinding page: 403.
//   - A state-changing request (not GET/HEAD/OPTIONS) must be same-origin: an Origin must be
//     the Host asked for, and Sec-Fetch-Site must not be cross-site or same-site: 403.
//     Without Origin (curl, scripts) it passes.
//   - The endpoints that take a JSON body (POST /api/run) require Content-Type:
//     application/json: 415. A cross-site page cannot send that without a CORS preflight,
//     which this server never grants.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <httplib.h>

namespace minfer::viz {

struct Refusal {
  int status;  // 403 or 415
  std::string message;
};

class RequestGuard {
 public:
  // `bound_host`: the address the server listens on (--host).
  explicit RequestGuard(std::string bound_host);

  // nullopt when the request may be served.
  std::optional<Refusal> check(const httplib::Request& req) const;

  // True when a Host header value ("name", "name:port", "[v6]:port") names this server.
  bool host_allowed(std::string_view host_header) const;

 private:
  std::string bound_;  // lower case, without brackets
  bool wildcard_ = false;
};

}  // namespace minfer::viz
