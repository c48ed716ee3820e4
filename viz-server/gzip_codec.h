// gzip (RFC 1952) compression for trace bodies, via zlib. Inflating goes through the
// recorder's capped reader (trace_input.h), the one inflater of the project.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "gzip_compress.h"
#include "trace_input.h"

namespace minfer::viz {

// True when the bytes start with the gzip magic (1f 8b).
bool looks_gzipped(std::string_view bytes);

using trace::gzip_compress;  // recorder/gzip_compress.h

// Inflates gzip bytes held in memory (concatenated members allowed). Throws minfer::Error
// naming `what` when they are not gzip, corrupt, truncated, followed by other bytes, or
// inflate beyond max_out bytes. Stored files: trace::read_trace_text reads them without
// holding the compressed bytes.
std::string gzip_decompress(std::string_view gz, const std::string& what,
                            uint64_t max_out = trace::kDefaultMaxTraceBytes);

}  // namespace minfer::viz
