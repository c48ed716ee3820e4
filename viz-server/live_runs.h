// Live runs (minfer-viz --model M.gguf, repeatable): the page starts a generation, the server
// runs the engine in-process — one run at a time — records a trace into the first traces
// directory and streams what happens to the page as Server-Sent Events. Built on generate() and
// the programs' TraceSession (recorder/programs/cli/trace_session.h: the trace is recorded as
// minfer records one), whose observer it tees to the event stream. Protocol: docs/live-runs.md.
//   GET  /api/run/models            {"enabled", "models": [...], "busy": bool, "run": id|null}
//   POST /api/run                   start (JSON body; 400 bad request, 409 busy) → 202 {"id", "trace"}
//   GET  /api/run/events[?id=N]     text/event-stream of run N (default: the latest), replayed
//                                   from its start
//   POST /api/run/cancel            stops the run at the next step boundary (its trace is kept)
//   GET  /api/vocab?model=F&ids=1,2 token texts from a served model's vocabulary (v1 traces)
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace httplib { class Server; }

namespace minfer::viz {

struct VizContext;
class LiveRuns;

// Creates ctx.live (only when models were given) and registers the routes; without models
// /api/run/models says {"enabled": false} and the other endpoints answer 404 "live runs are off".
void register_live_routes(httplib::Server& server, VizContext& ctx);

}  // namespace minfer::viz
