#include "trace_load.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "trace_file.h"

namespace minfer::trace {

using nlohmann::json;

std::string read_file_text(const std::string& path, bool* was_gzip) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, ": cannot open: ", std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, f);
  std::fclose(f);
  const bool gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (was_gzip) *was_gzip = gz;
  // gzread reads plain files as they are, so one path serves both.
  gzFile g = gzopen(path.c_str(), "rb");
  if (!g) fail(path, ": cannot open: ", std::strerror(errno));
  gzbuffer(g, 1 << 20);
  std::string text;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int n = gzread(g, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      const std::string msg = gzerror(g, &code);
      gzclose(g);
      fail(path, ": ", gz ? "corrupt gzip data: " : "read error: ", msg);
    }
    if (n == 0) break;
    text.append(buf.data(), static_cast<size_t>(n));
  }
  // A truncated gzip stream ends without error from gzread; gzclose reports it.
  const int rc = gzclose(g);
  if (gz && rc != Z_OK) fail(path, ": truncated or corrupt gzip data");
  return text;
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string parse_message(const json::parse_error& e) {
  // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." ->
  // the part after the position, which the caller replaces with the byte offset.
  std::string w = e.what();
  const size_t colon = w.find(": ", w.find("parse error"));
  return colon == std::string::npos ? w : w.substr(colon + 2);
}

// A file killed between "step written" and "tail written" ends inside a step: cut at the last
// step start ("\n{", see trace_file.h) and close the document with the unfinished tail.
bool salvage(const std::string& text, json& out) {
  // Only the last two step starts can be the cut point of a file this writer produced (the
  // step in flight, or the tail after it); trying more would only cost time on a broken file.
  size_t cut = text.size();
  for (int attempt = 0; attempt < 2; ++attempt) {
    cut = cut == 0 ? std::string::npos : text.rfind("\n{", cut - 1);
    if (cut == std::string::npos) return false;
    std::string head = text.substr(0, cut);
    while (!head.empty() && (head.back() == ',' || head.back() == '\n')) head.pop_back();
    try {
      out = json::parse(head + kOpenTail);
      return true;
    } catch (const json::parse_error&) {
    }
  }
  return false;
}

}  // namespace

json load_json_file(const std::string& path) {
  const std::string text = read_file_text(path);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, ": not valid JSON at byte ", e.byte, ": ", parse_message(e));
  }
}

json load_trace(const std::string& path, LoadInfo* info) {
  LoadInfo li;
  const std::string text = read_file_text(path, &li.gzip);
  li.bytes = text.size();
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    if (!ends_with(path, ".partial") || !salvage(text, doc))
      fail(path, ": not valid JSON at byte ", e.byte, ": ", parse_message(e));
    li.salvaged = true;
  }
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "minfer-trace")
    fail(path, ": not a minfer trace (the top-level \"format\" field is not \"minfer-trace\")");
  if (!doc.contains("version") || !doc["version"].is_number_integer())
    fail(path, ": field \"version\" is missing or not an integer");
  if (info) *info = li;
  return doc;
}

}  // namespace minfer::trace
