// What a backend computes for the recorder beside its step (the probes, engine/probes/): node
// summaries where the tensors live, the logits summary, the paired trace's reruns, GPU time and
// kernel records. The executor and the generation loop ask Backend::probes(); the defaults are a
// backend that computes none of it on a device (the CPU's: the host summarises what it reads).
#pragma once
#include <optional>
#include <string>

#include "core/engine_options.h"
#include "exec/observer.h"
#include "graph/graph.h"

namespace minfer {

class BackendProbes {
 public:
  virtual ~BackendProbes() = default;
  // Runs node n of the last step again on this backend's inputs of that step (its sources'
  // outputs, its KV cache), with the matmul path `path`, into scratch memory: the paired
  // trace's local error is n's output against this. Valid until the next rerun_node or
  // run_step; null when the backend cannot rerun nodes (see reruns_nodes) or n has no output.
  // A backend may return n's own output (output(n)) where the rerun would compute it with the
  // same kernels (cuda: every node but a quantized matmul of more than one row), so its local
  // error is exactly 0 without running anything.
  virtual const NodeOutput* rerun_node(const Graph& g, const Node& n, MatmulPath path) {
    (void)g; (void)n; (void)path;
    return nullptr;
  }
  virtual bool reruns_nodes() const { return false; }
  // Block size of the 8-bit quantization a MatMul/Logits node's kernel applies to its activation
  // input (32 for Q8_0/Q8_1, 256 for Q8_K); 0 when it computes on float activations.
  virtual int activation_block(const Node& n) const { (void)n; return 0; }
  // Before every run_step: what the observer `o` will read of the step, so the backend can
  // compute it on the device inside the step (cuda: summaries in the step's CUDA graph, CUPTI
  // kernel records); `o->wants(n)` selects the nodes. o = nullptr: nobody records the step (a
  // backend must not keep using an earlier run's observer, which may be gone). A cpu backend
  // ignores it.
  virtual void set_recording(const StepRecording& r, const Observer* o) { (void)r; (void)o; }
  // The last recorded step's GPU time and kernels (waits for the step); empty on cpu.
  virtual StepGpuTime gpu_time() { return {}; }
  // Whether everything an observer recording `r` reads of a step (node summaries, GPU time,
  // the logits summary) stays readable after the next step is launched: the generation loop
  // then launches step N+1 before it hands step N to the observer (read_step).
  virtual bool keeps_step_results(const StepRecording& r) const { (void)r; return false; }
  // The last step's logits summary, when the backend computed it (set_recording's
  // logits_top_k; chosen = the greedy token); nullopt otherwise.
  virtual std::optional<LogitsSummary> read_logits_summary(const Graph& g) { (void)g; return std::nullopt; }
  // "" when this backend can record per-kernel GPU timings, else why not (no CUPTI, refused).
  virtual std::string kernel_records_unavailable() const { return "the backend runs no GPU kernels"; }
  // Where node summaries are computed: "host" (cpu) or "device" (cuda, inside the step).
  virtual const char* summaries_computed_on() const { return "host"; }
};

}  // namespace minfer
