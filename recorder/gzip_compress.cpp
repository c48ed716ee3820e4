#include "gzip_compress.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace minfer::trace {
namespace {

constexpr int kGzipWindow = 15 + 16;  // max window, gzip wrapper
constexpr size_t kChunk = 1 << 16;

}  // namespace

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

}  // namespace minfer::trace
