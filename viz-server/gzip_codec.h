// gzip (RFC 1952) compression for trace bodies, via zlib.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace minfer::viz {

// True when the bytes start with the gzip magic (1f 8b).
bool looks_gzipped(std::string_view bytes);

std::string gzip_compress(std::string_view raw, int level = 6);

// Inflates a gzip stream (concatenated members allowed). Throws minfer::Error naming `what`
// when the stream is corrupt, truncated, or inflates beyond max_out bytes.
std::string gzip_decompress(std::string_view gz, const std::string& what,
                            size_t max_out = size_t(4) << 30);

}  // namespace minfer::viz
