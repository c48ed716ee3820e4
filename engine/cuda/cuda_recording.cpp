// Recording inside the step: node summaries forked onto side streams as the step writes their
// nodes and joined back (or left to an alternating graph's tail branch), the logits summary, and
// afterwards the step's GPU time and CUPTI kernel records.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/cuda_backend_impl.h"
#include "exec/buffer_plan.h"
#include "probes/cuda/logits_summary.h"
#include "probes/cuda/summarize.h"

namespace minfer {

using cuda::DeviceBuffer;
using cuda::DeviceOutput;
using cuda::StepPlan;

// The device summary plan of this step's recorded nodes; rebuilt (and the traced graph
// recaptured) only when the recorded node set or the spec changes.
void CudaBackend::Impl::prepare_summaries(const Graph& g, StepPlan& p) {
  StepSummaries& ss = p.summaries;
  // The launch of every traced step passes here: the same observer and recording need no walk.
  // More outliers than the device keeps are found on the host (DeviceOutput::outliers).
  const int k = std::min(rec.outliers, cuda::DeviceSummaries::kMaxOutliers);
  if (ss.ds && ss.observer == rec_observer && ss.ds->spec() == rec.spec && ss.ds->outliers() == k) return;
  // The recorded nodes, and the 8-bit activations of the recorded matmuls (for their block scales).
  std::vector<int> block(g.nodes.size(), -1);  // per node: -1 not summarised, else its scale block (0: none)
  for (const Node& n : g.nodes) {
    if (!has_output_buffer(n) || !rec_observer->wants(n)) continue;
    block[static_cast<size_t>(n.id)] = std::max(block[static_cast<size_t>(n.id)], 0);
    if (const int b = p.act_block[static_cast<size_t>(n.id)]; b > 0) block[static_cast<size_t>(n.src[0])] = b;
  }
  std::vector<int> index(g.nodes.size(), -1), node_of;
  std::vector<cuda::SummaryTensor> tensors;
  for (const Node& n : g.nodes)
    if (block[static_cast<size_t>(n.id)] >= 0) {
      index[static_cast<size_t>(n.id)] = static_cast<int>(tensors.size());
      tensors.push_back({out(p, n.id), n.rows(), n.cols(), block[static_cast<size_t>(n.id)]});
      node_of.push_back(n.id);
    }
  ss.observer = rec_observer;
  if (ss.ds && ss.ds->spec() == rec.spec && ss.ds->outliers() == k && ss.index == index) return;
  // The old summaries (and the graphs replaying them) may still be in use by a step in flight.
  sync_all("the steps in flight before their node summaries are replaced");
  ss.ds = std::make_unique<cuda::DeviceSummaries>(tensors, rec.spec, k);
  ss.index = std::move(index);
  ss.node_of = std::move(node_of);
  ss.live = {};
  p.drop_graphs(1);
}

// The device logits summary when the observer asks for one the kernels can give; rebuilt (and
// the graphs with it recaptured) only when k changes. False: the host summarises the row.
bool CudaBackend::Impl::prepare_logits_summary(const Graph& g, StepPlan& p) {
  const Node& last = g.nodes.back();
  const int k = rec.logits_top_k;
  if (!rec_observer || last.op != Op::Logits || k < 1 || k > cuda::DeviceLogitsSummary::kMaxTopK || k > last.cols())
    return false;
  if (p.logits_summary && p.logits_summary->k() == k && p.logits_summary->n() == last.cols()) return true;
  sync_all("the steps in flight before their logits summary is replaced");
  p.logits_summary = std::make_unique<cuda::DeviceLogitsSummary>(last.cols(), k);
  p.drop_graphs(2);
  return true;
}

// After the greedy argmax, on `s`: the logits row's summary, with the argmax as the chosen token.
void CudaBackend::Impl::enqueue_logits_summary(const Graph& g, StepPlan& p, cuda::CaptureRecorder* cap, cudaStream_t s) {
  const Node& last = g.nodes.back();
  {
    cuda::KernelProfiler::NodeScope scope(profiling && !cap, cuda::KernelProfiler::kRecorderScope);
    p.logits_summary->enqueue(out(p, last.id) + (last.rows() - 1) * last.cols(), p.argmax.as<int32_t>(), s);
  }
  if (cap) cap->mark(cuda::KernelProfiler::kRecorderScope);
}

// Tensors [first, end) of the step's summaries on the side streams that have work for them
// (small tensors, chunked tensors), after everything enqueued on the step's stream so far.
void CudaBackend::Impl::fork_summaries(StepPlan& p, size_t first, size_t end, cuda::CaptureRecorder* cap) {
  const std::array<bool, 2> work = p.summaries.ds->streams_used(first, end);
  CUDA_CHECK(cudaEventRecord(fork_ev, stream));
  for (size_t i = 0; i < 2; ++i)
    if (work[i]) CUDA_CHECK(cudaStreamWaitEvent(side[i], fork_ev, 0));
  {
    cuda::KernelProfiler::NodeScope scope(profiling && !cap, cuda::KernelProfiler::kRecorderScope);
    p.summaries.ds->enqueue(side[0], side[1], first, end);
  }
  for (size_t i = 0; i < 2; ++i) {
    side_forked[i] = side_forked[i] || work[i];
    // Only a stream with work: an idle one's last captured node is the step's own.
    if (cap && work[i]) cap->mark(cuda::KernelProfiler::kRecorderScope, side[i]);
  }
}

// The step's stream waits for the side streams' summaries (a capture must end joined): those
// this step forked, and clears the marks for the next step.
void CudaBackend::Impl::join_summaries() {
  for (size_t i = 0; i < 2; ++i) {
    if (!side_forked[i]) continue;
    CUDA_CHECK(cudaEventRecord(join_ev[i], side[i]));
    CUDA_CHECK(cudaStreamWaitEvent(stream, join_ev[i], 0));
    side_forked[i] = false;
  }
}

// The end of an alternating graph (host slot k), after the argmax. On the step's stream: the
// greedy token's copy into the slot and the step's end (ev_end, the event the next step waits
// for). Beside them, the tail: the summaries of tensors [tail_first, end) (small ones on
// side[0], chunked ones on side[1]) and the logits summary, then the copies of every record
// into host slot k, then tail_done[k], which the next step's graph waits for before it
// rewrites what the tail reads (enqueue). The events are recorded as external nodes, so the
// host and the other lane can wait for them in each launch.
void CudaBackend::Impl::enqueue_tail(const Graph& g, StepPlan& p, unsigned variant, size_t tail_first, int k) {
  const size_t slot = static_cast<size_t>(k);
  if ((variant & 1) && tail_first < p.summaries.node_of.size())
    fork_summaries(p, tail_first, p.summaries.node_of.size(), nullptr);
  // The logits summary and the copies run on side[0] after the argmax, whatever the part held.
  CUDA_CHECK(cudaEventRecord(fork_ev, stream));
  CUDA_CHECK(cudaStreamWaitEvent(side[0], fork_ev, 0));
  side_forked[0] = true;
  if (variant & 2) enqueue_logits_summary(g, p, nullptr, side[0]);
  if (side_forked[1]) {  // every part's records are written before they are copied
    CUDA_CHECK(cudaEventRecord(join_ev[1], side[1]));
    CUDA_CHECK(cudaStreamWaitEvent(side[0], join_ev[1], 0));
    side_forked[1] = false;
  }
  if (variant & 1) p.summaries.ds->copy_to_host(side[0], k);
  if (variant & 2) p.logits_summary->copy_to_host(side[0], k);
  cuda::record_visible(tail_done[slot], side[0]);
  Slot& sl = slots[slot];
  if (g.nodes.back().op == Op::Logits) {
    CUDA_CHECK(cudaMemcpyAsync(sl.host_token, p.argmax.get(), sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
    cuda::record_visible(sl.token_copied, stream);
  }
  cuda::record_visible(sl.ev_end, stream);
}

void CudaBackend::set_recording(const StepRecording& r, const Observer* o) {
  Impl& d = *impl_;
  d.rec = r;
  if (o != d.rec_observer)  // the summaries' node selection was that observer's: ask the new one
    for (auto& [key, p] : d.plans) p->summaries.observer = nullptr;
  d.rec_observer = o;
}

bool CudaBackend::keeps_step_results(const StepRecording& r) const {
  // Node summaries, outliers and block scales live in the host slots when the device computed
  // them all; CUPTI records belong to the last launched step only; the logits summary must be
  // the device's (else the row would be read, and the next step overwrites it).
  const bool nodes = !r.nodes || (r.summaries && r.outliers <= cuda::DeviceSummaries::kMaxOutliers);
  const bool logits = r.logits_top_k >= 1 && r.logits_top_k <= cuda::DeviceLogitsSummary::kMaxTopK &&
                      r.logits_top_k <= impl_->m.hp.n_vocab;
  return nodes && logits && !r.kernels;
}

void CudaBackend::read_step(bool previous) {
  Impl& d = *impl_;
  d.reading = previous ? d.cur ^ 1 : d.cur;
  Impl::Slot& sl = d.slots[static_cast<size_t>(d.reading)];
  const bool held = std::any_of(d.plans.begin(), d.plans.end(), [&](const auto& kv) { return kv.second.get() == sl.plan; });
  if (!sl.plan || !held) fail("read_step: that step's plan is gone (a new prompt or context)");
  sl.plan->summaries.read_slot = d.reading;
}

StepGpuTime CudaBackend::gpu_time() {
  Impl& d = *impl_;
  const Impl::Slot& sl = d.slots[static_cast<size_t>(d.reading)];
  if (!(sl.rec.summaries || sl.rec.kernels) || !sl.plan) return {};
  cuda::event_sync_bounded(sl.ev_end, "the recorded step");
  StepGpuTime t;
  if (sl.rec.kernels) {
    if (d.reading != d.cur) fail("gpu_time: kernel records exist for the last launched step only");
    t = d.profiling ? cuda::KernelProfiler::get().end_step(d.stream, sl.capture) : StepGpuTime{};
    if (!d.profiling) t.note = "cupti unavailable: " + kernel_records_unavailable();
    d.profiling = false;
    const cuda::StepFusion& f = sl.plan->fusion;
    for (KernelRecord& k : t.kernels) {  // a fused kernel computes every node of its group
      if (k.node < 0 || f.group_of.empty()) continue;
      const int gi = f.group_of[static_cast<size_t>(k.node)];
      if (gi >= 0) k.covers = f.groups[static_cast<size_t>(gi)].nodes;
    }
  } else {
    t.note = "cupti: kernels not recorded on this step";
  }
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, sl.ev_begin, sl.ev_end));
  t.event_ms = ms;
  if (t.gpu_ms < 0) t.gpu_ms = ms;
  t.host_ms = sl.host_ms;
  return t;
}

std::string CudaBackend::kernel_records_unavailable() const {
  if (!impl_->opts.cupti) return "disabled by MINFER_NO_CUPTI=1";
  const cuda::KernelProfiler& p = cuda::KernelProfiler::get();
  return p.available() ? "" : p.reason();
}

std::optional<LogitsSummary> CudaBackend::read_logits_summary(const Graph& g) {
  Impl& d = *impl_;
  const Impl::Slot& sl = d.slots[static_cast<size_t>(d.reading)];
  if (!sl.plan || !sl.logits_summary || g.nodes.back().op != Op::Logits) return std::nullopt;
  return sl.plan->logits_summary->read(d.reading);
}


}  // namespace minfer
