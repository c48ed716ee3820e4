#include "exec/executor.h"

#include <chrono>

namespace minfer {

NodeView Executor::view(const Graph& g, const Node& n) {
  NodeView v;
  v.time = n.executed() ? backend_.node_time(n) : NodeTime{0, 0};
  if (!n.executed() || !n.has_output) return v;
  v.out = backend_.output(n);
  if ((n.op == Op::MatMul || n.op == Op::Logits) && !n.src.empty()) {
    v.activation_block = backend_.probes().activation_block(n);
    if (v.activation_block > 0) v.activation = backend_.output(g.node(n.src[0]));
  }
  if (reference_) {
    v.ref = reference_->output(n);
    v.local_ref = backend_.probes().rerun_node(g, n, reference_->matmul_path());
  }
  return v;
}

StepRecording Executor::recording(const StepInfo& s) const {
  StepRecording r;
  if (observer_) {
    r = observer_->recording(s);
  } else {
    r.nodes = false;
  }
  if (!device_logits_) r.logits_top_k = 0;  // no GPU time on a summary nobody reads
  return r;
}

// What the reference backend computes of a step the observer records with `rec`: the summaries
// of the same nodes with the same spec, where its tensors live (the recorder reads its `ref`
// summary; a CUDA reference computes it in its step as the main backend does), nothing else (its
// kernels, outliers and logits are not recorded).
StepRecording Executor::reference_recording(const StepRecording& rec) {
  StepRecording r;
  r.nodes = rec.nodes;
  r.summaries = rec.summaries;
  r.spec = rec.spec;
  r.step_by_step = rec.step_by_step;
  return r;
}

void Executor::launch(const Graph& g, const StepInfo& s, const StepRecording& rec) {
  backend_.probes().set_recording(rec, observer_);
  if (reference_) reference_->probes().set_recording(reference_recording(rec), observer_);
  backend_.run_step(g, s);
  if (reference_) reference_->run_step(g, s);
}

void Executor::report_nodes(const Graph& g, const StepInfo& s, const StepRecording& rec, const StepGpuTime* gpu) {
  if (!observer_) return;
  // Node outputs outlive the step: the observer reads them (summaries are computed where the
  // tensors live) after the whole step ran, so a step stays one CUDA graph.
  if (rec.nodes)
    for (const Node& n : g.nodes)
      if (observer_->wants(n)) observer_->on_node_view(n, view(g, n));
  if (rec.summaries || rec.kernels) observer_->on_gpu_time(s, gpu ? *gpu : backend_.probes().gpu_time());
}

double Executor::run(const Graph& g, const StepInfo& s) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  if (observer_) observer_->on_step_begin(g, s);
  const StepRecording rec = recording(s);
  if (!reference_ || !observer_ || !(rec.summaries || rec.kernels)) {
    launch(g, s, rec);
    report_nodes(g, s, rec, nullptr);
  } else {
    // Paired and timed: the main step's GPU time and kernel records are taken before the
    // reference's step is launched, so they are the main step's alone (the reference's kernels,
    // and the reruns and comparisons that follow, neither land in its records nor share the GPU
    // with it).
    backend_.probes().set_recording(rec, observer_);
    backend_.run_step(g, s);
    const StepGpuTime gpu = backend_.probes().gpu_time();
    reference_->probes().set_recording(reference_recording(rec), observer_);
    reference_->run_step(g, s);
    report_nodes(g, s, rec, &gpu);
  }
  return std::chrono::duration<double>(clock::now() - t0).count();
}

void Executor::deliver(const Graph& g, const StepInfo& s, const StepRecording& rec, bool previous) {
  if (!observer_) return;
  observer_->on_step_begin(g, s);
  backend_.read_step(previous);
  report_nodes(g, s, rec, nullptr);
}

}  // namespace minfer
