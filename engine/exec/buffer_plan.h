// Buffer planning for a step whose node outputs nobody reads after it: every node output gets
// an offset into one arena, and two outputs share bytes only when their lifetimes do not
// overlap. Pure C++ (no device code); the CUDA backend uses it for untraced prefill steps.
//
// Lifetime of node n's output, in launch positions (inclusive at both ends):
//   first = position[n]                    (the launch that writes it)
//   last  = max(first, position[r]) over every executed node r with n in r.src
//           (the end of the step for the ids in live_to_end)
// Two outputs whose intervals touch at one position overlap: a kernel's inputs and its outputs
// never share bytes, except in place: a node named in in_place takes the bytes of its first
// source when it is that source's last reader and the two are the same size (an elementwise
// kernel reads each index before writing it; SwiGLU over a 4096-token prefill's gate saves
// n_ff * 4096 * 4 bytes). position[] is the launch position of each node: its own id for a node run
// alone, the id of its group's last node for a group run by one fused kernel (which reads the
// group's inputs and writes every member's output in that one launch).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace minfer {

struct BufferPlanOptions {
  std::vector<int> live_to_end;  // node ids still read after the step (e.g. the logits): never reused
  std::vector<int> external;     // node ids the caller gives buffers of their own: not placed
  std::vector<int> position;     // per node id: its launch position (empty: the node's id)
  std::vector<int> in_place;     // node ids that may write over their first source (see above)
  size_t align = 256;            // every offset and every size a multiple of this
};

struct BufferPlan {
  std::vector<int64_t> offset;  // per node id: byte offset in the arena; -1 when not placed
  std::vector<size_t> bytes;    // per node id: the output's bytes, aligned (0 when not placed)
  std::vector<int64_t> first, last;  // per node id: its lifetime (placed nodes only)
  std::vector<int> shares_with;      // per node id: the node whose bytes it took in place, or -1
  size_t arena_bytes = 0;       // the arena that holds every placed output
  size_t separate_bytes = 0;    // what one buffer per placed output would take (the sum)
};

// Whether the node has an output buffer in a step: executed, with an f32 output.
bool has_output_buffer(const Node& n);
size_t output_buffer_bytes(const Node& n);  // rows * cols * 4

// Greedy placement: outputs by size (largest first), each at the lowest aligned offset that
// collides with no placed output whose lifetime overlaps its own. Error on a bad option.
BufferPlan plan_buffers(const Graph& g, const BufferPlanOptions& o = {});

// "" when no two placed outputs with overlapping lifetimes share a byte (brute force over all
// pairs; outputs sharing in place excepted), else a description of the first conflict.
std::string check_buffer_plan(const Graph& g, const BufferPlan& p);

}  // namespace minfer
