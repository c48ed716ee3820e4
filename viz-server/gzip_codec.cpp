#include "gzip_codec.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace minfer::viz {
namespace {

constexpr int kGzipWindow = 15 + 16;  // max window, gzip wrapper
constexpr size_t kChunk = 1 << 16;

}  // namespace

bool looks_gzipped(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gzip_compress(std::string_view raw, int level) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail("gzip: deflateInit2 failed");
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(std::min<size_t>(raw.size(), UINT_MAX))) + 64);
  size_t in_off = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    size_t in_len = std::min<size_t>(raw.size() - in_off, UINT_MAX);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data() + in_off));
    zs.avail_in = static_cast<uInt>(in_len);
    if (out.size() - zs.total_out < kChunk) out.resize(out.size() + kChunk * 4);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - zs.total_out, UINT_MAX));
    bool last = in_off + in_len == raw.size();
    uLong before = zs.total_in;
    rc = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) {
      deflateEnd(&zs);
      fail("gzip: deflate failed");
    }
    in_off += zs.total_in - before;
  }
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
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
