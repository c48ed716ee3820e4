// The JSON API: /api/health, /api/traces, /api/traces/NAME, /api/compare?a=&b=.
#pragma once
#include <httplib.h>

#include "viz_context.h"

namespace minfer::viz {

// Registers the /api/ handlers (unknown /api/ paths answer 404 JSON). `ctx` must outlive
// the server.
void register_api_routes(httplib::Server& server, VizContext& ctx);

}  // namespace minfer::viz
