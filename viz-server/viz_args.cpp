#include "viz_args.h"

#include <filesystem>

#include "core/error.h"
#include "core/parse_number.h"
#include "format/trace_input.h"

namespace fs = std::filesystem;

namespace minfer::viz {
namespace {

void require_dir(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("minfer-viz: ", flag, " ", dir, ": not a directory");
}

}  // namespace

std::string viz_usage() {
  return "usage: minfer-viz [--host 127.0.0.1] [--port 8080] [--traces DIR]... [--web DIR]\n"
         "                  [--max-trace-bytes N[K|M|G]] [--max-steps N] [--model M.gguf]...\n"
         "  --host H      address to bind (default 127.0.0.1, loopback only)\n"
         "  --port P      TCP port, 0 = any free port (default 8080)\n"
         "  --traces DIR  directory of *.json / *.json.gz traces; repeatable (default ./traces)\n"
         "  --web DIR     built web app to serve at / (default ./web/dist when present)\n"
         "  --max-trace-bytes N  largest JSON text read from one trace (inflated size for\n"
         "                .json.gz; default 256M, or MINFER_TRACE_MAX_BYTES)\n"
         "  --max-steps N largest number of steps of one trace the server slices or compares\n"
         "                (default 100000; a longer trace is answered 413)\n"
         "  --model M.gguf  enables live runs from the page with this model; repeatable\n"
         "                (runs are saved as traces into the first --traces directory)\n";
}

VizArgs parse_viz_args(const std::vector<std::string>& args, const Environment& env) {
  VizArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "-h" || flag == "--help") {
      out.help = true;
      continue;
    }
    if (flag != "--host" && flag != "--port" && flag != "--traces" && flag != "--web" &&
        flag != "--max-trace-bytes" && flag != "--max-steps" && flag != "--model")
      fail("minfer-viz: unknown argument '", flag, "'\n", viz_usage());
    if (i + 1 >= args.size()) fail("minfer-viz: ", flag, " needs a value");
    const std::string& value = args[++i];
    if (flag == "--host") {
      if (value.empty()) fail("minfer-viz: --host: empty address");
      out.host = value;
    } else if (flag == "--port") {
      out.port = static_cast<int>(parse_int(value, "minfer-viz: --port", 0, 65535));
    } else if (flag == "--max-trace-bytes") {
      out.max_trace_bytes = trace::parse_byte_size(value, "minfer-viz: --max-trace-bytes");
    } else if (flag == "--max-steps") {
      out.max_steps = parse_uint(value, "minfer-viz: --max-steps", 1, uint64_t{1} << 32);
    } else if (flag == "--model") {
      std::error_code fec;
      if (!fs::is_regular_file(value, fec)) fail("minfer-viz: --model ", value, ": no such file");
      out.models.push_back(value);
    } else if (flag == "--traces") {
      require_dir(flag, value);
      out.traces_dirs.push_back(value);
    } else {
      require_dir(flag, value);
      out.web_dir = value;
    }
  }
  if (out.help) return out;
  if (out.max_trace_bytes == 0) out.max_trace_bytes = trace::default_max_trace_bytes(env);
  std::error_code ec;
  if (out.traces_dirs.empty()) {
    if (!fs::is_directory("traces", ec))
      fail("minfer-viz: no --traces DIR given and ./traces is not a directory");
    out.traces_dirs.push_back("traces");
  }
  if (out.web_dir.empty() && fs::is_directory("web/dist", ec)) out.web_dir = "web/dist";
  return out;
}

}  // namespace minfer::viz
