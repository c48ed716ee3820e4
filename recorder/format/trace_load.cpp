#include "format/trace_load.h"

#include <algorithm>

#include "core/error.h"
#include "json_read.h"
#include "trace_file.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A file killed between "step written" and "tail written" ends inside a step: cut at the last
// step start ("\n{", see trace_file.h) and close the document with the unfinished tail.
// A real trace has a value per 8 or more bytes of text (numbers print with 6 digits), so this
// only stops documents built to blow up in memory.
JsonReadOptions limits_for(uint64_t max_bytes) {
  JsonReadOptions o;
  o.max_values = std::max<uint64_t>(max_bytes / 8, 1024);
  return o;
}

bool salvage(const std::string& text, const std::string& what, uint64_t max_bytes, json& out) {
  // A crash can leave a file zero-filled past what was written: what comes before the NULs may
  // be whole.
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    try {
      out = parse_json_text(std::string_view(text).substr(0, nul), what, limits_for(max_bytes));
      return true;
    } catch (const JsonParseError&) {
    }
  }
  // Only the last two step starts can be the cut point of a file this writer produced (the
  // step in flight, or the tail after it); trying more would only cost time on a broken file.
  size_t cut = text.size();
  for (int attempt = 0; attempt < 2; ++attempt) {
    cut = cut == 0 ? std::string::npos : text.rfind("\n{", cut - 1);
    if (cut == std::string::npos) return false;
    std::string head = text.substr(0, cut);
    while (!head.empty() && (head.back() == ',' || head.back() == '\n')) head.pop_back();
    try {
      out = parse_json_text(head + kOpenTail, what, limits_for(max_bytes));
      return true;
    } catch (const JsonParseError&) {
    }
  }
  return false;
}

std::string label_of(const std::string& path, const ReadOptions& o) { return o.label.empty() ? path : o.label; }

}  // namespace

json load_json_file(const std::string& path, const ReadOptions& o) {
  return parse_json_text(read_trace_text(path, o), label_of(path, o), limits_for(o.max_bytes));
}

json load_trace(const std::string& path, LoadInfo* info, const ReadOptions& o) {
  const std::string what = label_of(path, o);
  LoadInfo li;
  json doc;
  if (ends_with(path, ".partial")) {  // may need salvaging: keep the text
    const std::string text = read_trace_text(path, o, &li.gzip);
    li.bytes = text.size();
    try {
      doc = parse_json_text(text, what, limits_for(o.max_bytes));
    } catch (const JsonParseError&) {
      if (!salvage(text, what, o.max_bytes, doc)) throw;
      li.salvaged = true;
    }
  } else {  // streamed: memory for the document only, and garbage fails at its first byte
    TraceInput in(path, o);
    doc = parse_json_stream(in, what, limits_for(o.max_bytes));
    li.gzip = in.gzip();
    li.bytes = in.bytes_out();
  }
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "minfer-trace")
    fail(what, ": not a minfer trace (the top-level \"format\" field is not \"minfer-trace\")");
  if (!doc.contains("version") || !doc["version"].is_number_integer())
    fail(what, ": field \"version\" is missing or not an integer");
  if (info) *info = li;
  return doc;
}

}  // namespace minfer::trace
