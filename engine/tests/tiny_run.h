// What the whole-model GPU tests share: the tiny preset's prompt, the decode inputs they feed
// (teacher-forced), and an observer that keeps every node's full output of the last step.
#pragma once
#include <cstdint>
#include <vector>

#include "exec/observer.h"

namespace minfer::testing {

inline const std::vector<int32_t> kPrompt = {9707, 11, 1879, 0, 576, 3974, 13, 758, 1124};
inline const std::vector<int32_t> kDecodeInputs = {1879, 13, 40, 2776, 11, 9707};

struct NodeCapture : Observer {
  std::vector<std::vector<float>> nodes;  // per node id ({} when it has no output)
  void on_step_begin(const Graph& g, const StepInfo&) override { nodes.assign(g.nodes.size(), {}); }
  void on_node(const Node& n, const NodeOutput* out, const NodeTime&) override {
    if (out) nodes[static_cast<size_t>(n.id)] = out->to_host();
  }
};

}  // namespace minfer::testing
