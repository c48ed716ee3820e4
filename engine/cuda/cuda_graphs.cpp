// A decode step captured into a CUDA graph and instantiated, per recording variant (and per host
// slot for an alternating one); run_step replays it.
#include <cuda_runtime.h>

#include "cuda/cuda_backend_impl.h"

namespace minfer {

using cuda::DeviceBuffer;
using cuda::DeviceOutput;
using cuda::StepPlan;

namespace {
// The graph of what `work` enqueues on `s` (and on the streams it forks from s and joins back).
template <class Work>
cudaGraph_t capture_on(cudaStream_t s, Work&& work) {
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    work();
  } catch (...) {
    cudaStreamEndCapture(s, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  return graph;
}

cudaGraphExec_t instantiate(cudaGraph_t graph, const char* what) {
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  cuda::check(e, what, __FILE__, __LINE__);
  return exec;
}
}  // namespace

void CudaBackend::Impl::capture(const Graph& g, StepPlan& p, unsigned variant, bool with_map) {
  StepPlan::Captured& c = p.graphs[variant];
  const bool alternating = StepPlan::alternates(variant);
  try {
    for (int k = 0; k < (alternating ? 2 : 1); ++k) {
      cuda::CaptureRecorder cap(stream);
      cudaGraph_t graph = capture_on(stream, [&] {
        const size_t tail_first = enqueue(g, p, &cap, variant, alternating ? tail_done[static_cast<size_t>(k ^ 1)] : nullptr);
        if (alternating) enqueue_tail(g, p, variant, tail_first, k);
        else if (variant & 2) enqueue_logits_summary(g, p, &cap, stream);
        join_summaries();
      });
      if (k == 0) c.map = with_map ? cap.finish(graph) : cuda::CaptureMap{};
      if (variant == 0) {
        size_t n_nodes = 0;
        cudaGraphGetNodes(graph, nullptr, &n_nodes);
        decode_graph_nodes = static_cast<int64_t>(n_nodes);
      }
      c.exec[static_cast<size_t>(k)] = instantiate(graph, "cudaGraphInstantiate (decode step)");
    }
  } catch (...) {  // one slot's graph without the other's would replay half the alternation
    p.drop_graph(variant);
    throw;
  }
}

}  // namespace minfer
