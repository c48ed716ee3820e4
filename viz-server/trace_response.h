// GET /api/traces/NAME: the trace's JSON bytes with content negotiation (gzip) and
// revalidation (ETag / If-None-Match -> 304).
#pragma once
#include <httplib.h>

#include "body_cache.h"
#include "trace_index.h"
#include "format/trace_input.h"

namespace minfer::viz {

// Streams the file when it can be sent as stored (so a client that disconnects costs
// nothing more than a failed write); re-encoded bodies come from `cache`. A .json.gz is
// inflated (for a client without gzip) through the capped reader under `read`; a plain file
// larger than read.max_bytes is sent as stored rather than compressed in memory. Throws
// minfer::Error (naming the file by read.label) when a stored gzip stream is corrupt.
void send_trace_file(const httplib::Request& req, httplib::Response& res, const TraceEntry& file,
                     const trace::ReadOptions& read, BodyCache& cache);

// Sends `body` through a content provider: no copy into the response, no second compression
// by httplib.
void send_body(httplib::Response& res, Body body, const std::string& content_type);

}  // namespace minfer::viz
