// What an executor needs from a backend: buffers for a graph, one method per node, the logits.
// Backends are chosen at start (cpu | cuda) and never fall back silently mid-run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "exec/observer.h"
#include "graph/graph.h"

namespace minfer {

enum class MatmulPath { MMQ, Float };  // MINFER_MMQ=0 selects Float for prefill
const char* matmul_path_name(MatmulPath p);  // "mmq" / "f16"
MatmulPath matmul_path_from_env();

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;    // "cpu", "cuda"
  virtual std::string device() const = 0;  // CPU model / GPU name
  virtual MatmulPath matmul_path() const = 0;
  // Reserves the KV cache for positions [0, n_ctx).
  virtual void reserve_context(int64_t n_ctx) = 0;
  // Prepares buffers for g and feeds its inputs (token ids, positions pos0..).
  virtual void begin(const Graph& g, const std::vector<int32_t>& tokens, int pos0) = 0;
  virtual void run(const Graph& g, const Node& n) = 0;
  // The node's output for observers (valid until the next begin()); null if it has none.
  virtual const NodeOutput* output(const Node& n) const = 0;
  // Copies the final node's (logits) last row to host.
  virtual void read_logits(const Graph& g, std::vector<float>& out) = 0;
};

}  // namespace minfer
