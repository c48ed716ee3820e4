#include "probes/cuda/kernel_profiler.h"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "cuda/cuda_check.h"

namespace minfer::cuda {
namespace {

constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kAlign = 8;
// Kernel records always; for eager steps also the kinds that carry NodeScope's external ids
// (those come with API records only, so the runtime and driver API kinds are on too; their
// records are dropped in on_buffer). A graph replay's kernels are attributed through the
// capture map, so its steps skip the API records (a record per API call costs host time).
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                         CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
constexpr size_t kGraphKinds = 1;  // the leading kinds a graph replay needs
std::mutex g_mutex;  // CUPTI delivers buffers on its own thread

std::string cupti_error(CUptiResult r, const char* call) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(call) + ": " + (s ? s : "unknown CUPTI error");
}

std::string demangle(const char* name) {
  if (!name) return "(unnamed)";
  // A step's ~170 records name the same few dozen kernels: demangle each once (callers hold
  // g_mutex).
  static std::unordered_map<std::string, std::string> known;
  const auto [it, fresh] = known.try_emplace(name);
  if (fresh) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    it->second = status == 0 && d ? std::string(d.get()) : std::string(name);
  }
  return it->second;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  KernelProfiler::get().on_buffer(buffer, valid);
  std::free(buffer);
}

void CUPTIAPI resource_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) return;
  const auto* r = static_cast<const CUpti_ResourceData*>(data);
  const auto* g = static_cast<const CUpti_GraphData*>(r->resourceDescriptor);
  uint64_t clone = 0, original = 0;
  if (cuptiGetGraphNodeId(g->node, &clone) == CUPTI_SUCCESS && cuptiGetGraphNodeId(g->originalNode, &original) == CUPTI_SUCCESS)
    KernelProfiler::get().on_clone(clone, original);
}

}  // namespace

// Edge queries pass an edge-data array: kernels launched with PDL (pdl.cuh) are joined by
// programmatic edges, and a query of such an edge without one fails with cudaErrorLossyQuery.
void CaptureRecorder::mark(int node, cudaStream_t on) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t n = 0;
  CUDA_CHECK(cudaStreamGetCaptureInfo(on ? on : s_, &st, nullptr, nullptr, &deps, &edges, &n));
  if (st == cudaStreamCaptureStatusActive && n == 1) marks_[deps[0]] = node;
}

CaptureMap CaptureRecorder::finish(cudaGraph_t g) const {
  size_t count = 0;
  CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CUDA_CHECK(cudaGraphGetNodes(g, nodes.data(), &count));
  // A node has fewer than `count` neighbours: arrays that large never truncate a query.
  std::vector<cudaGraphNode_t> nb(count + 1);
  std::vector<cudaGraphEdgeData> nb_edges(count + 1);
  auto neighbours = [&](cudaGraphNode_t x, bool dependents) {
    size_t k = nb.size();
    if (dependents) CUDA_CHECK(cudaGraphNodeGetDependentNodes(x, nb.data(), nb_edges.data(), &k));
    else CUDA_CHECK(cudaGraphNodeGetDependencies(x, nb.data(), nb_edges.data(), &k));
    return std::vector<cudaGraphNode_t>(nb.begin(), nb.begin() + static_cast<std::ptrdiff_t>(k));
  };
  // A node's work ends at its mark on the stream that enqueued it: the walk back from a mark along
  // dependencies, stopped at earlier marks, reaches exactly that work (the capture may fork: a
  // traced step's summaries run on a side stream).
  std::map<cudaGraphNode_t, int> owner;
  for (const auto& [end, id] : marks_) {
    std::vector<cudaGraphNode_t> frontier{end};
    while (!frontier.empty()) {
      cudaGraphNode_t x = frontier.back();
      frontier.pop_back();
      if ((x != end && marks_.count(x)) || !owner.emplace(x, id).second) continue;
      for (cudaGraphNode_t d : neighbours(x, false)) frontier.push_back(d);
    }
  }
  // Kernels in a topological order (the order a one-stream capture enqueued them).
  std::map<cudaGraphNode_t, size_t> waiting;
  std::vector<cudaGraphNode_t> order, ready;
  for (cudaGraphNode_t x : nodes)
    if (const size_t k = neighbours(x, false).size(); k == 0) ready.push_back(x);
    else waiting[x] = k;
  std::reverse(ready.begin(), ready.end());
  while (!ready.empty()) {
    cudaGraphNode_t x = ready.back();
    ready.pop_back();
    order.push_back(x);
    const std::vector<cudaGraphNode_t> next = neighbours(x, true);
    for (auto it = next.rbegin(); it != next.rend(); ++it)
      if (--waiting[*it] == 0) ready.push_back(*it);
  }
  CaptureMap m;
  m.built = true;
  for (cudaGraphNode_t x : order) {
    cudaGraphNodeType type;
    CUDA_CHECK(cudaGraphNodeGetType(x, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    CaptureMap::Kernel k;
    const auto o = owner.find(x);
    k.node = o == owner.end() ? -1 : o->second;
    cuptiGetGraphNodeId(x, &k.cupti_id);
    cudaKernelNodeParams p{};
    const char* name = nullptr;
    if (cudaGraphKernelNodeGetParams(x, &p) == cudaSuccess && cudaFuncGetName(&name, p.func) == cudaSuccess && name)
      k.name = name;
    cudaGetLastError();  // a kernel the runtime cannot name (driver-launched) is not an error
    m.kernels.push_back(std::move(k));
  }
  return m;
}

KernelProfiler& KernelProfiler::get() {
  static KernelProfiler p;
  return p;
}

// MINFER_NO_CUPTI=1 (CudaOptions::cupti) is the backend's: it then never asks for the profiler.
KernelProfiler::KernelProfiler() {
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    reason_ = cupti_error(r, "cuptiActivityRegisterCallbacks");
    return;
  }
  CUpti_SubscriberHandle sub;
  r = cuptiSubscribe(&sub, resource_callback, nullptr);
  if (r == CUPTI_SUCCESS) r = cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  // Without the clone callback, graph kernels are still attributed by launch order and name.
  available_ = true;
}

void KernelProfiler::begin_step(bool graph) {
  if (!available_) return;
  // Consecutive recorded steps keep the kinds they share enabled: enabling the kernel kind anew
  // makes the next graph launch costly (CUPTI prepares the replay for tracing).
  const size_t want = graph ? kGraphKinds : std::size(kKinds);
  for (size_t i = want; i < kinds_; ++i) cuptiActivityDisable(kKinds[i]);
  for (size_t i = kinds_; i < want; ++i) {
    CUptiResult r = cuptiActivityEnable(kKinds[i]);
    if (r != CUPTI_SUCCESS) {
      kinds_ = i;
      stop();
      available_ = false;
      reason_ = cupti_error(r, "cuptiActivityEnable");
      return;
    }
  }
  kinds_ = want;
  {
    std::lock_guard<std::mutex> l(g_mutex);
    raw_.clear();
    external_.clear();
  }
  cuptiGetTimestamp(&step_start_);
  collecting_ = true;
}

void KernelProfiler::stop() {
  for (size_t i = 0; i < kinds_; ++i) cuptiActivityDisable(kKinds[i]);
  kinds_ = 0;
}

KernelProfiler::NodeScope::NodeScope(bool on, int node) : on_(on) {
  if (on_) cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, static_cast<uint64_t>(node + 8));
}
KernelProfiler::NodeScope::~NodeScope() {
  uint64_t id = 0;
  if (on_) cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

void KernelProfiler::on_buffer(uint8_t* buffer, size_t valid) {
  std::lock_guard<std::mutex> l(g_mutex);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      raw_.push_back(Raw{demangle(k->name), k->start, k->end, k->graphNodeId, k->correlationId, k->graphId,
                         {k->gridX, k->gridY, k->gridZ}, {k->blockX, k->blockY, k->blockZ},
                         static_cast<int>(k->registersPerThread),
                         static_cast<int64_t>(k->staticSharedMemory) + k->dynamicSharedMemory});
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
      if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
        external_[e->correlationId] = static_cast<int64_t>(e->externalId) - 8;
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) dropped_ += static_cast<int64_t>(dropped);
}

void KernelProfiler::on_clone(uint64_t clone_id, uint64_t original_id) {
  std::lock_guard<std::mutex> l(g_mutex);
  clone_of_[clone_id] = original_id;
}

StepGpuTime KernelProfiler::end_step(cudaStream_t s, const CaptureMap* graph) {
  StepGpuTime t;
  if (!collecting_) {
    t.note = available_ ? "cupti: kernels not recorded on this step" : "cupti unavailable: " + reason_;
    return t;
  }
  sync_bounded(s, "the step before reading its kernel records");
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  collecting_ = false;
  std::lock_guard<std::mutex> l(g_mutex);
  std::vector<Raw> raw;
  for (Raw& r : raw_)
    if (r.start >= step_start_) raw.push_back(std::move(r));
  raw_.clear();
  std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return a.start < b.start; });
  // Index of each captured kernel by its CUPTI node id, for clone -> captured lookups.
  std::map<uint64_t, size_t> captured;
  if (graph)
    for (size_t i = 0; i < graph->kernels.size(); ++i) captured[graph->kernels[i].cupti_id] = i;
  size_t graph_ordinal = 0;
  uint64_t first = UINT64_MAX, last = 0, busy = 0, busy_end = 0;
  for (const Raw& r : raw) {
    KernelRecord k;
    k.name = r.name;
    k.start_ns = static_cast<int64_t>(r.start) - static_cast<int64_t>(step_start_);
    k.duration_ns = static_cast<int64_t>(r.end - r.start);
    k.grid = r.grid;
    k.block = r.block;
    k.registers = r.registers;
    k.shared_bytes = r.shared;
    if (r.graph_id != 0) {
      k.graph_node = static_cast<int64_t>(r.graph_node);
      const size_t ordinal = graph_ordinal++;
      if (!graph) {
        k.unattributed = "graph kernel without a capture map";
      } else {
        auto orig = clone_of_.find(r.graph_node);
        auto it = captured.find(orig != clone_of_.end() ? orig->second : r.graph_node);
        if (it != captured.end()) {
          k.node = graph->kernels[it->second].node;
        } else if (ordinal < graph->kernels.size() && demangle(graph->kernels[ordinal].name.c_str()) == r.name) {
          k.node = graph->kernels[ordinal].node;  // same position in the chain, same function
        } else {
          k.unattributed = "graph node id unknown and launch order disagrees with the capture";
        }
        if (k.node == -1 && k.unattributed.empty()) k.unattributed = "captured outside any graph node's work";
      }
    } else {
      auto e = external_.find(r.correlation);
      if (e == external_.end()) k.unattributed = "launched outside any graph node";
      else k.node = static_cast<int>(e->second);
    }
    if (k.node == kRecorderScope) {
      k.node = -1;
      k.unattributed = "recorder: node and logits summaries";
    }
    first = std::min(first, r.start);
    last = std::max(last, r.end);
    // Union of intervals (records sorted by start).
    if (r.start >= busy_end) busy += r.end - r.start, busy_end = r.end;
    else if (r.end > busy_end) busy += r.end - busy_end, busy_end = r.end;
    t.kernels.push_back(std::move(k));
  }
  if (!raw.empty()) {
    t.gpu_ms = static_cast<double>(last - first) * 1e-6;
    t.busy_ms = static_cast<double>(busy) * 1e-6;
  } else {
    t.note = "cupti: no kernel records arrived for this step";
  }
  t.dropped = dropped_;
  dropped_ = 0;
  return t;
}

}  // namespace minfer::cuda
