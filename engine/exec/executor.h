// Runs a step (a whole graph) on a backend, then shows every node output to the observer. A
// paired executor runs the same step on a reference backend in lockstep (same graph, same
// tokens) and shows the observer both outputs of each node, and the node rerun with the
// reference path on the main run's inputs (the error a node adds itself).
#pragma once
#include "exec/backend.h"
#include "exec/observer.h"

namespace minfer {

class Executor {
 public:
  explicit Executor(Backend& b, Backend* reference = nullptr) : backend_(b), reference_(reference) {}
  void set_observer(Observer* o) { observer_ = o; }
  // Whether the backend's own logits summary is read (greedy decoding from the logits as they
  // are); otherwise recording() asks for none, and the logits row is summarised on the host.
  void set_device_logits(bool on) { device_logits_ = on; }
  Observer* observer() const { return observer_; }
  // Runs the step on the backend (and the reference), then the observer; returns the wall
  // seconds of all of it.
  double run(const Graph& g, const StepInfo& s);

  // Pipelined runs: run() in two halves, so the next step can be launched in between.
  // What the observer reads of step s (nothing without an observer).
  StepRecording recording(const StepInfo& s) const;
  // Enqueues the step on the backend(s), prepared for `rec`.
  void launch(const Graph& g, const StepInfo& s, const StepRecording& rec);
  // Hands a launched step to the observer: on_step_begin, its nodes, its GPU time. previous:
  // a later step was launched since (Backend::read_step).
  void deliver(const Graph& g, const StepInfo& s, const StepRecording& rec, bool previous);

 private:
  NodeView view(const Graph& g, const Node& n);
  static StepRecording reference_recording(const StepRecording& rec);
  // gpu: the step's GPU time when already read (else read here, after the nodes).
  void report_nodes(const Graph& g, const StepInfo& s, const StepRecording& rec, const StepGpuTime* gpu);

  Backend& backend_;
  Backend* reference_;
  Observer* observer_ = nullptr;
  bool device_logits_ = false;
};

}  // namespace minfer
