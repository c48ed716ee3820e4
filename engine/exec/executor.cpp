#include "exec/executor.h"

#include <chrono>

namespace minfer {

double Executor::run(const Graph& g, const StepInfo& s) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  if (observer_) observer_->on_step_begin(g, s);
  backend_.run_step(g, s);
  if (observer_) {
    // Node outputs outlive the step: the observer reads them (summaries are computed where the
    // tensors live) after the whole step ran, so a step stays one CUDA graph.
    for (const Node& n : g.nodes) {
      if (!observer_->wants(n)) continue;
      const NodeOutput* out = n.executed() && n.has_output ? backend_.output(n) : nullptr;
      observer_->on_node(n, out, n.executed() ? backend_.node_time(n) : NodeTime{0, 0});
    }
  }
  return std::chrono::duration<double>(clock::now() - t0).count();
}

}  // namespace minfer
