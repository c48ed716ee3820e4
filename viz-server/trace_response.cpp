#include "trace_response.h"

#include <fstream>

#include "core/error.h"
#include "file_bytes.h"
#include "gzip_codec.h"
#include "http_util.h"

namespace minfer::viz {
namespace {

constexpr size_t kChunk = 1 << 16;
const char* kJson = "application/json";

// Reads the first bytes to learn the real encoding (a .json.gz that is not gzip, or a
// gzip stream named .json, is served by what it is, not by its name).
bool file_is_gzipped(const TraceEntry& file) {
  std::ifstream in(file.path, std::ios::binary);
  char magic[2] = {0, 0};
  in.read(magic, 2);
  return in.gcount() == 2 && looks_gzipped(std::string_view(magic, 2));
}

void stream_file(httplib::Response& res, const TraceEntry& file) {
  auto in = std::make_shared<std::ifstream>(file.path, std::ios::binary);
  if (!*in) fail(file.name, ": cannot open for reading");
  res.set_content_provider(
      file.size, kJson, [in](size_t offset, size_t length, httplib::DataSink& sink) {
        char buf[kChunk];
        in->seekg(static_cast<std::streamoff>(offset));
        in->read(buf, static_cast<std::streamsize>(std::min(length, kChunk)));
        std::streamsize got = in->gcount();
        if (got <= 0) return false;  // file shrank under us: end the connection
        return sink.write(buf, static_cast<size_t>(got));  // false: the client is gone
      });
}

std::string cache_key(const TraceEntry& file, const char* variant) {
  return file.path.string() + "|" + std::to_string(file.size) + "|" +
         std::to_string(file.mtime_ns) + "|" + variant;
}

}  // namespace

void send_body(httplib::Response& res, Body body, const std::string& content_type) {
  res.set_content_provider(
      body->size(), content_type,
      [body](size_t offset, size_t length, httplib::DataSink& sink) {
        return sink.write(body->data() + offset, std::min(length, kChunk));
      });
}

void send_trace_file(const httplib::Request& req, httplib::Response& res, const TraceEntry& file,
                     const trace::ReadOptions& read, BodyCache& cache) {
  std::string etag = file_etag(file.size, file.mtime_ns);
  res.set_header("ETag", etag);
  res.set_header("Cache-Control", "no-cache");  // traces change (fresh recordings): revalidate
  res.set_header("Vary", "Accept-Encoding");
  if (etag_matches(req, etag)) {
    res.status = 304;
    return;
  }
  const bool stored_gzip = file_is_gzipped(file);
  // Compressing means holding the whole file in memory: not for files beyond the cap.
  const bool want_gzip = accepts_gzip(req) && (stored_gzip || file.size <= read.max_bytes);
  res.status = 200;
  if (want_gzip) res.set_header("Content-Encoding", "gzip");
  if (want_gzip == stored_gzip) {
    stream_file(res, file);
  } else if (want_gzip) {
    // Level 1: a 25 MB trace compresses in a fraction of a second (level 6 took seconds and
    // dominated the first paint); numeric JSON still shrinks about 4x.
    send_body(res, cache.get(cache_key(file, "gzip"),
                             [&] { return gzip_compress(read_file_bytes(file.path), 1); }),
              kJson);
  } else {
    send_body(res, cache.get(cache_key(file, "identity"),
                             [&] { return trace::read_trace_text(file.path.string(), read); }),
              kJson);
  }
}

}  // namespace minfer::viz
