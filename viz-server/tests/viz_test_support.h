// Shared helpers for the minfer-viz server tests: temp dirs, small valid minfer-trace v2
// documents (docs/trace-format.md), raw-socket requests and an in-process server.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gzip_codec.h"
#include "format/trace_input.h"
#include "viz_server.h"

namespace minfer::viz::test {

namespace fs = std::filesystem;
using nlohmann::json;

// Inflates gzip bytes held in memory (a response body) through the recorder's capped reader,
// the one inflater the server uses (trace_input.h); concatenated members allowed. Throws
// minfer::Error naming `what` when they are not gzip, corrupt, truncated, followed by other
// bytes, or inflate beyond max_out bytes. Only the tests hold gzip bytes in memory.
inline std::string gzip_decompress(std::string_view gz, const std::string& what,
                                   uint64_t max_out = trace::kDefaultMaxTraceBytes) {
  if (!looks_gzipped(gz)) fail(what, ": not gzip data");
  trace::ReadOptions o;
  o.max_bytes = max_out;
  o.label = what;
  trace::TraceInput in(trace::InMemory{gz}, o);
  std::string out;
  char buf[1 << 16];
  for (size_t n; (n = in.read(buf, sizeof buf)) > 0;) out.append(buf, n);
  return out;
}

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("minfer-viz-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path_);
    path_ = fs::canonical(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

struct TraceSpec {
  uint32_t seed = 1;
  std::string model_file = "tiny-q8_0.gguf";
  std::string model_sha = std::string(64, 'a');
  std::string matmul_path = "mmq";
  int prompt_tokens = 5;
  int decode_steps = 3;
  int width = 64;                 // feature width of every node (grid keeps every column)
  float noise = 0.0f;             // perturbation added to every value (for a second path)
  int diverge_from_node = -1;     // nodes >= this get a large perturbation (-1: none)
};

struct NodeDef {
  const char* name;
  const char* op;
  int layer;
  const char* weight;
  bool has_output;
};

inline const std::vector<NodeDef>& node_defs() {
  static const std::vector<NodeDef> defs = {
      {"token_embd", "get_rows", -1, "token_embd.weight", true},
      {"blk.0.attn_norm", "rms_norm", 0, "blk.0.attn_norm.weight", true},
      {"blk.0.attn_q", "matmul", 0, "blk.0.attn_q.weight", true},
      {"blk.0.kv_store", "kv_store", 0, nullptr, false},
      {"blk.0.attn_out", "attention", 0, nullptr, true},
      {"blk.0.ffn_out", "add", 0, nullptr, true},
      {"result_norm", "rms_norm", -1, "output_norm.weight", true},
      {"logits", "logits", -1, "token_embd.weight", true},
  };
  return defs;
}

inline json make_graph(const std::string& id, int n_tokens, int width) {
  json nodes = json::array();
  const auto& defs = node_defs();
  for (size_t i = 0; i < defs.size(); ++i) {
    const NodeDef& d = defs[i];
    json src = i == 0 ? json::array() : json::array({i - 1});
    nodes.push_back({{"id", i},
                     {"name", d.name},
                     {"op", d.op},
                     {"shape", {n_tokens, width}},
                     {"dtype", "f32"},
                     {"src", src},
                     {"layer", d.layer},
                     {"weight", d.weight ? json(d.weight) : json(nullptr)},
                     {"weight_type", d.weight ? json("Q8_0") : json(nullptr)},
                     {"bias", nullptr},
                     {"fused_from", json::array()},
                     {"fused_into", -1},
                     {"has_output", d.has_output}});
  }
  return {{"id", id}, {"phase", id}, {"n_tokens", n_tokens}, {"fused", true}, {"nodes", nodes}};
}

// A node record whose stats, grid and histogram agree with each other (the grid holds the
// whole rows x width tensor).
// Base values come from `rng` (the run), the perturbation of size `noise` from `noise_rng`.
inline json make_node_record(int id, int rows, int width, std::mt19937& rng,
                             std::mt19937& noise_rng, float noise) {
  std::normal_distribution<float> value(0.0f, 1.5f), perturb(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows) * width);
  for (float& x : v) {
    x = value(rng);
    if (noise > 0) x += noise * perturb(noise_rng);
    if (x == 0.0f) x = 0.25f;  // non-zero inputs
  }
  double mn = v[0], mx = v[0], sum = 0, abssum = 0, sq = 0;
  for (float x : v) {
    mn = std::min<double>(mn, x);
    mx = std::max<double>(mx, x);
    sum += x;
    abssum += std::fabs(x);
  }
  double mean = sum / v.size();
  for (float x : v) sq += (x - mean) * (x - mean);
  const int bins = 8;
  std::vector<int64_t> counts(bins, 0);
  for (float x : v) {
    int b = static_cast<int>((x - mn) / (mx - mn) * bins);
    counts[std::clamp(b, 0, bins - 1)]++;
  }
  return {{"id", id},
          {"time_us", 10.0 + id},
          {"stats",
           {{"min", mn}, {"max", mx}, {"mean", mean}, {"absmean", abssum / v.size()},
            {"std", std::sqrt(sq / v.size())}, {"count", v.size()}, {"nan", 0}, {"inf", 0}}},
          {"grid",
           {{"rows", rows}, {"cols", width}, {"row_stride", 1}, {"col_stride", 1},
            {"shape", {rows, width}}, {"values", v}}},
          {"hist",
           {{"lo", mn}, {"hi", mx}, {"counts", counts}, {"underflow", 0}, {"overflow", 0}}}};
}

// (Built with += : GCC 12 warns falsely (-Wrestrict) on "literal" + std::string at -O3.)
inline std::string token_text(int id) {
  std::string s = "t";
  s += std::to_string(id);
  return s;
}

inline json make_logits(int chosen) {
  json top = json::array();
  double p = 0.5;
  for (int k = 0; k < 5; ++k, p /= 2)
    top.push_back({{"id", chosen + k}, {"text", token_text(chosen + k)}, {"p", p},
                   {"logit", 10.0 - k}});
  return {{"n_vocab", 1000}, {"top", top}, {"entropy", 1.25}, {"chosen", chosen},
          {"chosen_text", token_text(chosen)}, {"chosen_rank", 0}, {"chosen_p", 0.5}};
}

// A complete, schema-valid minfer-trace v2 document.
inline json make_trace(const TraceSpec& spec) {
  // Values depend on the seed only, so two specs with the same seed describe the same run
  // (as two matmul paths would) and differ by their noise.
  std::mt19937 rng(spec.seed), noise_rng(spec.seed * 7919u + 13u);
  json steps = json::array();
  const int n_nodes = static_cast<int>(node_defs().size());
  for (int s = 0; s <= spec.decode_steps; ++s) {
    bool prefill = s == 0;
    int rows = prefill ? spec.prompt_tokens : 1;
    json tokens = json::array();
    for (int t = 0; t < rows; ++t) {
      int id = prefill ? 100 + t : 200 + s;
      tokens.push_back({{"id", id}, {"text", token_text(id)}});
    }
    json nodes = json::array();
    for (int n = 0; n < n_nodes; ++n) {
      if (!node_defs()[n].has_output) {
        nodes.push_back({{"id", n}, {"no_output", "kv_store"}});
        continue;
      }
      bool diverged = spec.diverge_from_node >= 0 && n >= spec.diverge_from_node;
      std::mt19937 node_rng(rng());
      nodes.push_back(make_node_record(n, rows, spec.width, node_rng, noise_rng,
                                       diverged ? 2.0f : spec.noise));
    }
    steps.push_back({{"index", s},
                     {"phase", prefill ? "prefill" : "decode"},
                     {"graph", prefill ? "prefill" : "decode"},
                     {"pos", prefill ? 0 : spec.prompt_tokens + s - 1},
                     {"tokens", tokens},
                     {"time_ms", 1.5 + s},
                     {"nodes", nodes},
                     {"logits", make_logits(200 + s + 1)},
                     {"kernels", json::array()}});
  }
  json meta = {
      {"model",
       {{"file", spec.model_file}, {"sha256", spec.model_sha}, {"size_bytes", 123456},
        {"architecture", "qwen2"}, {"name", "tiny"},
        {"hparams", {{"n_vocab", 1000}, {"n_embd", spec.width}, {"n_layer", 1}}},
        {"weight_types", {{"attn_q", "Q8_0"}}}}},
      {"backend", "cpu"},
      {"device", "test cpu"},
      {"matmul_path", spec.matmul_path},
      {"cuda_graph", false},
      {"threads", 2},
      {"prompt", "hello world"},
      {"sampler", {{"temperature", 0.0}, {"top_k", 0}, {"top_p", 1.0}, {"seed", 1}, {"n_predict", spec.decode_steps}}},
      {"minfer_version", "0.1.0"},
      {"commit", "test"},
      {"recorded_at", "2026-01-02T03:04:05Z"},
      {"options",
       {{"grid_rows", 32}, {"grid_cols", 64}, {"hist_bins", 8}, {"top_k", 5}, {"nodes", ""},
        {"steps", "all"}, {"stats_only", false}}}};
  json decode_ms = json::array();
  for (int s = 1; s <= spec.decode_steps; ++s) decode_ms.push_back(1.5 + s);
  return {{"format", "minfer-trace"},
          {"version", 2},
          {"complete", true},
          {"meta", meta},
          {"graphs", {make_graph("prefill", spec.prompt_tokens, spec.width),
                      make_graph("decode", 1, spec.width)}},
          {"steps", steps},
          {"timings",
           {{"load_ms", 5.0}, {"prefill_ms", 1.5}, {"decode_ms", decode_ms},
            {"prefill_tok_s", 1000.0}, {"decode_tok_s", 300.0}}}};
}

struct RawResponse {
  int status = 0;
  std::string head;  // status line + headers
  std::string body;
};

// Sends `request` verbatim (no client-side normalization) and reads until the server closes.
inline RawResponse raw_request(int port, const std::string& request) {
  RawResponse out;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return out;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return out;
  }
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string all;
  char buf[16384];
  // Read until the server closes, or until the body announced by Content-Length is in (an
  // error answer to a garbled request may leave the connection open until a timeout).
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    all.append(buf, static_cast<size_t>(n));
    size_t end = all.find("\r\n\r\n");
    size_t cl = all.find("Content-Length: ");
    if (end != std::string::npos && cl != std::string::npos && cl < end &&
        all.size() >= end + 4 + std::strtoull(all.c_str() + cl + 16, nullptr, 10))
      break;
  }
  ::close(fd);
  size_t split = all.find("\r\n\r\n");
  out.head = all.substr(0, split);
  out.body = split == std::string::npos ? "" : all.substr(split + 4);
  if (all.rfind("HTTP/1.1 ", 0) == 0) out.status = std::atoi(all.c_str() + 9);
  return out;
}

inline RawResponse raw_get(int port, const std::string& target) {
  return raw_request(port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

// A server on an ephemeral loopback port, stopped on destruction.
class RunningServer {
 public:
  explicit RunningServer(VizConfig config) {
    config.host = "127.0.0.1";
    config.port = 0;
    server_ = std::make_unique<VizServer>(config);
    port_ = server_->start();
  }
  int port() const { return port_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    return c;
  }
  VizServer& server() { return *server_; }

 private:
  std::unique_ptr<VizServer> server_;
  int port_ = 0;
};

}  // namespace minfer::viz::test
