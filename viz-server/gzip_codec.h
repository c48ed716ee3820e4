// gzip (RFC 1952) compression for trace bodies, via zlib. Inflating goes through the
// recorder's capped reader (trace_input.h), the one inflater of the project; the server reads
// stored files only (trace::read_trace_text), so it holds no in-memory inflater of its own.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "gzip_compress.h"
#include "format/trace_input.h"

namespace minfer::viz {

// True when the bytes start with the gzip magic (1f 8b).
bool looks_gzipped(std::string_view bytes);

using trace::gzip_compress;  // recorder/gzip_compress.h

}  // namespace minfer::viz
