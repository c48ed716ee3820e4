// What the whole-model GPU tests share: the tiny preset's prompt, the decode inputs they feed
// (teacher-forced), an observer that keeps every node's full output of the last step, and the
// run of prefill + decode steps that collects them.
#pragma once
#include <cstdint>
#include <vector>

#include "exec/backend.h"
#include "exec/executor.h"
#include "exec/observer.h"

namespace minfer::testing {

inline const std::vector<int32_t> kPrompt = {9707, 11, 1879, 0, 576, 3974, 13, 758, 1124};
inline const std::vector<int32_t> kDecodeInputs = {1879, 13, 40, 2776, 11, 9707};

struct NodeCapture : Observer {
  std::vector<std::vector<float>> nodes;  // per node id ({} when it has no output)
  void on_step_begin(const Graph& g, const StepInfo&) override { nodes.assign(g.nodes.size(), {}); }
  void on_node_view(const Node& n, const NodeView& v) override {
    if (v.out) nodes[static_cast<size_t>(n.id)] = v.out->to_host();
  }
};

struct StepResult {
  std::vector<std::vector<float>> nodes;  // per node id, as NodeCapture keeps them
  std::vector<float> logits;
  int32_t greedy = -1;                    // the backend's device argmax (when it has one)
};

// The prompt through `pre`, then kDecodeInputs one by one through `dec`, with a NodeCapture
// observing: every node's output and the logits of each step.
inline std::vector<StepResult> run_teacher_forced(Backend& b, const Graph& pre, const Graph& dec) {
  b.reserve_context(static_cast<int64_t>(kPrompt.size() + kDecodeInputs.size()));
  Executor ex(b);
  NodeCapture cap;
  ex.set_observer(&cap);
  std::vector<StepResult> r;
  auto one = [&](const Graph& g, const StepInfo& s) {
    ex.run(g, s);
    StepResult sr;
    if (b.greedy_on_device()) sr.greedy = b.read_greedy_token(g, false);
    b.read_logits(g, sr.logits);
    sr.nodes = cap.nodes;
    r.push_back(std::move(sr));
  };
  one(pre, StepInfo{Phase::Prefill, 0, 0, kPrompt});
  for (size_t i = 0; i < kDecodeInputs.size(); ++i)
    one(dec, StepInfo{Phase::Decode, static_cast<int>(i) + 1, static_cast<int>(kPrompt.size() + i), {kDecodeInputs[i]}});
  return r;
}

}  // namespace minfer::testing
