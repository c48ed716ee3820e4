#include "exec/executor.h"

#include <chrono>

namespace minfer {

double Executor::run(const Graph& g, const StepInfo& s) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  backend_.begin(g, s.tokens, s.pos0);
  if (observer_) observer_->on_step_begin(g, s);
  for (const Node& n : g.nodes) {
    if (!n.executed()) {
      if (observer_ && observer_->wants(n)) observer_->on_node(n, nullptr, 0.0);
      continue;
    }
    if (!observer_) {
      backend_.run(g, n);
      continue;
    }
    auto a = clock::now();
    backend_.run(g, n);
    double sec = std::chrono::duration<double>(clock::now() - a).count();
    if (observer_->wants(n)) observer_->on_node(n, n.has_output ? backend_.output(n) : nullptr, sec);
  }
  return std::chrono::duration<double>(clock::now() - t0).count();
}

}  // namespace minfer
