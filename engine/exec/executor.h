// Runs a graph node by node on a backend and shows each node output to the observer.
#pragma once
#include "exec/backend.h"
#include "exec/observer.h"

namespace minfer {

class Executor {
 public:
  explicit Executor(Backend& b) : backend_(b) {}
  void set_observer(Observer* o) { observer_ = o; }
  Observer* observer() const { return observer_; }
  // Feeds the step's tokens, runs every executed node; returns the wall seconds.
  double run(const Graph& g, const StepInfo& s);

 private:
  Backend& backend_;
  Observer* observer_ = nullptr;
};

}  // namespace minfer
