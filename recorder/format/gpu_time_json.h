// The GPU side of a step record (docs/trace-format.md, "Step" and "Kernel"): the step's GPU, busy,
// idle and host times, dropped CUPTI records, its kernels, and each node's GPU time from them.
#pragma once
#include <string>
#include <vector>

#include "exec/observer.h"

namespace minfer::trace {

// `,"gpu_ms":..,"gpu_busy_ms":..,"idle_ms":..,"event_ms":..,"host_ms":..,"kernels_dropped":..,
// "kernels_note":..` (fields that were not measured are left out).
void append_step_gpu_fields(std::string& o, const StepGpuTime& t);
// The "kernels" array body: one Kernel object per record.
void append_kernels(std::string& o, const std::vector<KernelRecord>& kernels);

// Per node id: the summed duration of the kernels attributed to it (µs) and the first one's
// start (µs from the step start); -1 for nodes without kernels.
struct NodeGpuTime {
  double us = -1, start_us = -1;
};
std::vector<NodeGpuTime> node_gpu_times(const std::vector<KernelRecord>& kernels, size_t n_nodes);
// `,"gpu_us":..,"gpu_start_us":..` for a node with kernels, nothing otherwise.
void append_node_gpu_fields(std::string& o, const NodeGpuTime& t);

}  // namespace minfer::trace
