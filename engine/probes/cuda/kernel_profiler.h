// Per-kernel GPU timings from the CUPTI Activity API (CONCURRENT_KERNEL records), attributed to
// graph nodes two ways:
//  - eager launches: the node id is pushed as a CUPTI external correlation id around the node's
//    launches (NodeScope), so every kernel it launches (ours or cuBLAS's) carries it;
//  - CUDA graph replays: at capture, each captured kernel node is mapped to the graph node that
//    enqueued it (CaptureMap); CUPTI's resource callback reports every node instantiation clones,
//    so a record's graphNodeId (a clone's) leads back to the captured node. When that fails, the
//    k-th kernel of the replay is matched to the k-th captured kernel if their names agree.
// CUPTI is process-wide and admits one subscriber: when it refuses (another profiler attached,
// no permission), available() is false and reason() says why; the run goes on without records.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "exec/observer.h"

namespace minfer::cuda {

// The captured kernels of one graph, in launch (chain) order, with the node that enqueued each.
struct CaptureMap {
  struct Kernel {
    uint64_t cupti_id = 0;  // cuptiGetGraphNodeId of the captured node
    std::string name;       // mangled function name ("" when the runtime cannot tell)
    int node = -1;
  };
  std::vector<Kernel> kernels;
  bool built = false;       // false: captured without a map (kernels were not being recorded)
};

// Records, during stream capture, which graph node each enqueued piece of work belongs to.
class CaptureRecorder {
 public:
  explicit CaptureRecorder(cudaStream_t s) : s_(s) {}
  // Call after enqueueing node `node`'s work on stream `on` (default: the capturing stream,
  // else a stream forked from it): that stream's current leaf closes the node's range.
  void mark(int node, cudaStream_t on = nullptr);
  // After cudaStreamEndCapture: walks the captured graph back from every mark and builds the
  // map (asks CUPTI for the nodes' ids, so only when kernels are recorded).
  CaptureMap finish(cudaGraph_t g) const;

 private:
  cudaStream_t s_;
  std::map<cudaGraphNode_t, int> marks_;  // last captured node of each graph node's work
};

class KernelProfiler {
 public:
  // The process-wide profiler; initialises CUPTI on first use.
  static KernelProfiler& get();
  bool available() const { return available_; }
  const std::string& reason() const { return reason_; }

  // Starts collecting (enables the activity kinds) and notes the step start; `graph`: the step
  // is a graph replay (attributed through its capture map, not external correlation ids).
  void begin_step(bool graph);
  // Stops collecting once the stream is idle and returns the step's kernels, attributed with
  // `graph` for graph replays (null for eager steps). Step-relative times. The activity kinds
  // stay enabled for the next recorded step: stop() disables them before unrecorded work.
  StepGpuTime end_step(cudaStream_t s, const CaptureMap* graph);
  void stop();

  // Eager attribution: kernels launched while a NodeScope is alive carry the node id.
  class NodeScope {
   public:
    NodeScope(bool on, int node);
    ~NodeScope();
    NodeScope(const NodeScope&) = delete;
    NodeScope& operator=(const NodeScope&) = delete;

   private:
    bool on_;
  };
  static constexpr int kRecorderScope = -2;  // the recorder's own summary kernels

  // Called by CUPTI (static trampolines in the .cpp).
  void on_buffer(uint8_t* buffer, size_t valid);
  void on_clone(uint64_t clone_id, uint64_t original_id);

 private:
  KernelProfiler();
  struct Raw {
    std::string name;
    uint64_t start, end, graph_node;
    uint32_t correlation, graph_id;
    std::array<int, 3> grid, block;
    int registers;
    int64_t shared;
  };
  bool available_ = false;
  std::string reason_;
  bool collecting_ = false;
  size_t kinds_ = 0;  // the leading kKinds enabled
  uint64_t step_start_ = 0;
  std::vector<Raw> raw_;
  std::map<uint32_t, int64_t> external_;  // correlation id -> pushed id
  std::map<uint64_t, uint64_t> clone_of_;  // cloned graph node id -> captured node id
  int64_t dropped_ = 0;
};

}  // namespace minfer::cuda
