#include "gzip_codec.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace minfer::viz {
namespace {

constexpr size_t kChunk = 1 << 16;

}  // namespace

bool looks_gzipped(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gzip_decompress(std::string_view gz, const std::string& what, uint64_t max_out) {
  if (!looks_gzipped(gz)) fail(what, ": not gzip data");
  trace::ReadOptions o;
  o.max_bytes = max_out;
  o.label = what;
  trace::TraceInput in(trace::InMemory{gz}, o);
  std::string out;
  char buf[kChunk];
  for (size_t n; (n = in.read(buf, sizeof buf)) > 0;) out.append(buf, n);
  return out;
}

}  // namespace minfer::viz
