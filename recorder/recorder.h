// The trace recorder: an Observer that turns every node output, the logits and the step
// timings into a streamed minfer-trace v3 file (docs/trace-format.md). The CLI does only:
//   auto opts = trace::RecorderOptions::from_env_and_args(process_environment(), args);
//   trace::Recorder rec(opts, meta_json, [&](int32_t id) { return tok.token_bytes(id); });
//   executor.set_observer(rec.observer());   // nullptr when no trace was asked for
//   ... run ...
//   rec.finish(timings_json);                // no-op when disabled
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "exec/observer.h"
#include "recorder_options.h"

namespace minfer::trace {

class Recorder final : public Observer {
 public:
  using TokenText = std::function<std::string(int32_t)>;

  // meta: the run metadata of docs/trace-format.md ("meta"); the recorder adds "options" and,
  // when absent, "recorded_at", "minfer_version" and "commit". Creates "<path>.partial" at
  // once (throws Error naming it when it cannot) unless opts is disabled: then nothing is
  // created and every call is a no-op.
  Recorder(RecorderOptions opts, nlohmann::json meta, TokenText token_text);
  ~Recorder() override;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  bool enabled() const { return impl_ != nullptr; }
  Observer* observer() { return enabled() ? this : nullptr; }
  const RecorderOptions& options() const { return opts_; }
  std::string partial_path() const;  // "" when disabled

  void on_graph(const Graph& g) override;
  void on_step_begin(const Graph& g, const StepInfo& s) override;
  StepRecording recording(const StepInfo& s) const override;
  bool wants(const Node& n) const override;
  // Paired traces add the reference's summary and the comparison (docs: NodeRecord `cmp`).
  void on_node_view(const Node& n, const NodeView& v) override;
  // With `sampled` and, paired, `ref_logits` and the step's `compare`.
  void on_step_logits(const StepInfo& s, const StepLogits& l) override;
  void on_step_end(const StepInfo& s, double seconds) override;

  // The step's GPU time and kernels (CUDA backends), before on_step_end.
  void on_gpu_time(const StepInfo& s, const StepGpuTime& t) override;

  // Returns once every ended step is written to the file (the run shows a token only then).
  void flush() override;
  bool caught_up() override;

  // Closes the trace: timings (docs: "timings"), "complete": true, moved to the final path.
  void finish(const nlohmann::json& timings);

 private:
  struct Impl;
  RecorderOptions opts_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer::trace
