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

std::string gzip_decompress(std::string_view gz, const std::string& what, size_t max_out) {
  std::string out;
  size_t in_off = 0;
  while (in_off < gz.size()) {  // one iteration per gzip member
    z_stream zs{};
    if (inflateInit2(&zs, kGzipWindow) != Z_OK) fail(what, ": inflateInit2 failed");
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      size_t in_len = std::min<size_t>(gz.size() - in_off, UINT_MAX);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + in_off));
      zs.avail_in = static_cast<uInt>(in_len);
      char buf[kChunk];
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      uLong before_in = zs.total_in;
      rc = inflate(&zs, Z_NO_FLUSH);
      in_off += zs.total_in - before_in;
      size_t produced = sizeof buf - zs.avail_out;
      if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && produced > 0)) {
        std::string msg = zs.msg ? zs.msg : "corrupt or truncated data";
        inflateEnd(&zs);
        fail(what, ": gzip: ", msg);
      }
      if (out.size() + produced > max_out) {
        inflateEnd(&zs);
        fail(what, ": gzip: inflates beyond ", max_out, " bytes");
      }
      out.append(buf, produced);
      if (rc != Z_STREAM_END && in_off == gz.size() && produced == 0) {
        inflateEnd(&zs);
        fail(what, ": gzip: truncated stream");
      }
    }
    inflateEnd(&zs);
  }
  return out;
}

}  // namespace minfer::viz
