// Runs a step (a whole graph) on a backend, then shows every node output to the observer.
#pragma once
#include "exec/backend.h"
#include "exec/observer.h"

namespace minfer {

class Executor {
 public:
  explicit Executor(Backend& b) : backend_(b) {}
  void set_observer(Observer* o) { observer_ = o; }
  Observer* observer() const { return observer_; }
  // Runs the step on the backend, then the observer; returns the wall seconds of both.
  double run(const Graph& g, const StepInfo& s);

 private:
  Backend& backend_;
  Observer* observer_ = nullptr;
};

}  // namespace minfer
