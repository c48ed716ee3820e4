// gzip (RFC 1952) compression of bytes in memory, via zlib: the one deflater of the project
// (minfer-viz's response bodies, the tests' gzipped traces). Inflating is trace_input.h's.
#pragma once
#include <string>
#include <string_view>

namespace minfer::trace {

std::string gzip_compress(std::string_view raw, int level = 6);

}  // namespace minfer::trace
