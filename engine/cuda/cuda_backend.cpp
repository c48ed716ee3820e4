// CudaBackend: construction (weights, streams, events), the KV cache, run_step and the reads of a
// step's logits and greedy token. The other concerns are in the files cuda_backend_impl.h lists.
#include "cuda/cuda_backend.h"
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"
#include "cuda/cuda_backend_impl.h"
#include "cuda/device_bandwidth.h"
#include "cuda/device_info.h"
#include "cuda/launch_settings.h"
#include "cuda/matmul_f16.h"
#include "cuda/mmq.h"
#include "cuda/mmvq.h"
#include "cuda/mmvq_stream.h"

namespace minfer {

using cuda::DeviceBuffer;
using cuda::DeviceOutput;
using cuda::StepPlan;

CudaBackend::CudaBackend(const Model& m, std::optional<MatmulPath> path, const CudaOptions& options)
    : impl_(std::make_unique<Impl>(m, path.value_or(MatmulPath::MMQ), options)) {
  // The CUDA module's process-wide switches (PDL, a wait after each launch, the wait bound):
  // every launcher reads them, and launchers have no backend.
  cuda::apply_launch_settings(options);
  std::string why;
  if (!cuda::device_usable(&why)) fail("cuda backend: ", why);
  CUDA_CHECK(cudaSetDevice(0));
  Impl& d = *impl_;
  for (cudaStream_t* s : {&d.lanes[0], &d.lanes[1], &d.side[0], &d.side[1]})
    CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  d.stream = d.lanes[0];
  for (cudaEvent_t* e : {&d.fork_ev, &d.lane_switch, &d.join_ev[0], &d.join_ev[1], &d.tail_done[0], &d.tail_done[1]})
    CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  // Recorded once with nothing before them, so the first steps' waits for a tail return at once.
  for (cudaEvent_t e : d.tail_done) CUDA_CHECK(cudaEventRecord(e, d.side[0]));
  // Before any capture: an alternating graph captures its slot's events and pinned token.
  for (Impl::Slot& sl : d.slots) {
    CUDA_CHECK(cudaEventCreate(&sl.ev_begin));
    CUDA_CHECK(cudaEventCreate(&sl.ev_end));
    CUDA_CHECK(cudaEventCreateWithFlags(&sl.token_copied, cudaEventDisableTiming));
    CUDA_CHECK(cudaMallocHost(&sl.host_token, sizeof(int32_t)));
  }
  impl_->check_weight_types();
  // The streaming decode matvec where it measured faster: the wider models (mmvq_stream.h).
  cuda::set_stream_enabled(options.mmvq_stream && m.hp.n_embd >= cuda::kStreamMinModelWidth);
  cuda::set_direct_enabled(options.mmvq_direct);
  cuda::check_cublas(cublasCreate(&impl_->cublas), "cublasCreate");
  // A fixed workspace: cuBLAS then never allocates inside a step (or a captured graph).
  impl_->cublas_workspace.alloc(32u << 20, "the cuBLAS workspace");
  cuda::check_cublas(cublasSetWorkspace(impl_->cublas, impl_->cublas_workspace.get(), impl_->cublas_workspace.bytes()),
                     "cublasSetWorkspace");
  impl_->weights = std::make_unique<cuda::DeviceWeights>(m, impl_->stream);
  impl_->comparer = std::make_unique<cuda::DeviceComparer>();
  CUDA_CHECK(cudaEventCreateWithFlags(&impl_->rerun.done, cudaEventDisableTiming));
  // The default's f16 path takes only weights that are MMQ's too: the type check above holds for it.
  if (!path && impl_->weights->matmul_dequant_takes_all(m)) impl_->path = MatmulPath::Float;
  if (impl_->path == MatmulPath::Float) impl_->weights->build_w16_cache(m, impl_->stream);
}

CudaBackend::~CudaBackend() = default;

void CudaBackend::Impl::check_weight_types() const {
  auto check = [&](const WeightView& w, bool prefill) {
    if (!is_quantized(w.type)) return;  // F32/F16/BF16: float GEMV / cuBLAS
    if (!cuda::mmvq_supports(w.type))
      fail("cuda backend: weight '", w.name, "' has type ", minfer::name(w.type), ", which the mmvq (decode) kernel does not support");
    if (prefill && path == MatmulPath::MMQ && !cuda::mmq_supports(w.type))
      fail("cuda backend: weight '", w.name, "' has type ", minfer::name(w.type),
           ", which the mmq (prefill) kernel does not support; MINFER_MMQ=0 selects the f16 path");
  };
  for (const auto& l : m.layers)
    for (const WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) check(*w, true);
  check(m.output, false);  // the LM head runs on one row: always a matvec
}

std::string CudaBackend::device() const { return cuda::device_description(); }
MatmulPath CudaBackend::matmul_path() const { return impl_->path; }
bool CudaBackend::step_graphs() const { return impl_->graphs; }

void CudaBackend::reserve_context(int64_t n_ctx) {
  Impl& d = *impl_;
  if (n_ctx > d.m.hp.n_ctx)
    fail("context of ", n_ctx, " tokens exceeds the model's limit of ", d.m.hp.n_ctx, " (",
         architecture_name(d.m.hp.arch), ".context_length)");
  if (n_ctx <= d.n_ctx) return;
  d.sync_all("the last step before growing the KV cache");
  const size_t bytes = static_cast<size_t>(n_ctx) * static_cast<size_t>(d.m.hp.n_embd_kv()) * sizeof(float);
  d.k_cache.resize(static_cast<size_t>(d.m.hp.n_layer));
  d.v_cache.resize(static_cast<size_t>(d.m.hp.n_layer));
  for (size_t l = 0; l < d.k_cache.size(); ++l) {
    d.k_cache[l].alloc(bytes, "the KV cache (K, layer " + std::to_string(l) + ")");
    d.v_cache[l].alloc(bytes, "the KV cache (V, layer " + std::to_string(l) + ")");
  }
  d.n_ctx = n_ctx;
  // Captured graphs hold the old cache pointers and a split-KV grid sized for the old context.
  d.plans.clear();
  d.last = nullptr;
  for (auto& sl : d.slots) sl.plan = nullptr;
}

void CudaBackend::run_step(const Graph& g, const StepInfo& s) {
  Impl& d = *impl_;
  if (static_cast<int>(s.tokens.size()) != g.n_tokens)
    fail("step feeds ", s.tokens.size(), " tokens to a graph built for ", g.n_tokens);
  if (s.pos0 < 0 || s.pos0 + g.n_tokens > d.n_ctx)
    fail("positions up to ", s.pos0 + g.n_tokens, " exceed the reserved context of ", d.n_ctx, " tokens");
  StepPlan& p = d.plan_for(g, d.outputs_private(g));
  ++d.steps_launched;
  // A chained step's token is the last launched step's argmax, still in this plan's buffer.
  const bool chained = s.token_on_device;
  if (chained) {
    const Impl::Slot& prev = d.slots[static_cast<size_t>(d.cur)];
    if (g.n_tokens != 1 || !prev.has_token || prev.plan != &p)
      fail("run_step: a step fed the previous step's greedy token must follow a one-token step of the same graph");
  } else {
    for (int32_t t : s.tokens)
      if (t < 0 || t >= d.m.hp.n_vocab) fail("token id ", t, " is outside the vocabulary [0, ", d.m.hp.n_vocab, ")");
  }
  // The staging buffer is rewritten below: the previous step's copy out of it must be done (the
  // rest of that step may still run: its recording, while the host prepares this one).
  cuda::event_sync_bounded(p.inputs_copied, "the previous step's input copy");
  const size_t nt = static_cast<size_t>(g.n_tokens);
  for (size_t i = 0; i < nt; ++i) {
    p.host_inputs[i] = s.tokens[i];
    p.host_inputs[nt + i] = s.pos0 + static_cast<int32_t>(i);
  }
  const bool recording = d.rec.summaries || d.rec.kernels;
  const bool summaries = d.rec.summaries && d.rec_observer;
  if (summaries) d.prepare_summaries(g, p);
  const bool logits_summary = d.prepare_logits_summary(g, p);
  const bool graph = g.phase == Phase::Decode && d.graphs;
  // CUPTI is touched only when kernels are recorded (an untraced run never initialises it), and
  // never with MINFER_NO_CUPTI=1 (CudaOptions::cupti).
  d.profiling = d.rec.kernels && d.opts.cupti && cuda::KernelProfiler::get().available();
  // A step whose kernels CUPTI records keeps its summaries inside it (its records then hold them).
  unsigned variant = (summaries ? 1u : 0u) | (logits_summary ? 2u : 0u);
  if (variant && d.profiling) variant |= StepPlan::kTailJoined;
  const bool alternating = graph && StepPlan::alternates(variant);
  d.cur ^= 1;
  d.reading = d.cur;
  Impl::Slot& sl = d.slots[static_cast<size_t>(d.cur)];
  sl.plan = &p;
  sl.rec = d.rec;
  sl.logits_summary = logits_summary;
  sl.capture = nullptr;
  if (!d.profiling && d.cupti_on) {  // the steps before were recorded: no records of this one
    cuda::KernelProfiler::get().stop();
    d.cupti_on = false;
  }
  if (graph) {  // capture before CUPTI starts collecting, so a step's records are its replay's only
    StepPlan::Captured& c = p.graphs[variant];
    const bool stale = c.exec[0] && d.profiling && !c.map.built;  // captured without kernel records' map
    if (!c.exec[0] || stale) {  // the steps in flight may replay it, and use the side streams
      d.sync_all("the steps in flight before a graph is captured");
      if (stale) p.drop_graph(variant);
      d.capture(g, p, variant, d.profiling);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (d.profiling) {  // this step's records only: the previous step's recording may still run
    d.sync_all("the previous step and its summaries before kernel records are collected");
    cuda::KernelProfiler::get().begin_step(graph);
    d.cupti_on = true;
  }
  // An alternating graph runs on its slot's lane, everything else on `stream`.
  const int lane = alternating ? d.cur : 0;
  const cudaStream_t ls = d.lanes[static_cast<size_t>(lane)];
  d.enter_lane(lane, alternating);
  if (d.rerun.pending) {  // a rerun of the last step reads buffers this step rewrites
    CUDA_CHECK(cudaStreamWaitEvent(ls, d.rerun.done, 0));
    d.rerun.pending = false;
  }
  if (recording) CUDA_CHECK(cudaEventRecord(sl.ev_begin, ls));
  if (chained)
    CUDA_CHECK(cudaMemcpyAsync(p.tokens.get(), p.argmax.get(), sizeof(int32_t), cudaMemcpyDeviceToDevice, ls));
  else
    CUDA_CHECK(cudaMemcpyAsync(p.tokens.get(), p.host_inputs, nt * sizeof(int32_t), cudaMemcpyHostToDevice, ls));
  CUDA_CHECK(cudaMemcpyAsync(p.positions.get(), p.host_inputs + nt, nt * sizeof(int32_t), cudaMemcpyHostToDevice, ls));
  CUDA_CHECK(cudaEventRecord(p.inputs_copied, ls));
  d.last = &p;
  if (!graph) {
    d.enqueue(g, p, nullptr, variant | StepPlan::kTailJoined, nullptr);
    if (logits_summary) d.enqueue_logits_summary(g, p, nullptr, d.stream);
    d.join_summaries();
  } else {
    CUDA_CHECK(cudaGraphLaunch(p.graphs[variant].exec[alternating ? static_cast<size_t>(d.cur) : 0], ls));
    sl.capture = &p.graphs[variant].map;
  }
  sl.has_token = g.nodes.back().op == Op::Logits;
  // An alternating graph copies the token and the records into its slot itself (enqueue_tail).
  if (!alternating) {
    if (recording) CUDA_CHECK(cudaEventRecord(sl.ev_end, ls));
    if (sl.has_token) {  // the greedy token first, ahead of the recording's copies
      CUDA_CHECK(cudaMemcpyAsync(sl.host_token, p.argmax.get(), sizeof(int32_t), cudaMemcpyDeviceToHost, ls));
      CUDA_CHECK(cudaEventRecord(sl.token_copied, ls));
    }
    if (summaries) p.summaries.ds->copy_to_host(ls, d.cur);
    if (logits_summary) p.logits_summary->copy_to_host(ls, d.cur);
  } else if (summaries) {
    p.summaries.ds->expect(d.cur);  // the graph's own copy, captured once
  }
  // Into this step's host slot: the previous step's stays readable while this one runs.
  const size_t slot = static_cast<size_t>(d.cur);
  p.summaries.live[slot] = summaries;
  p.summaries.read_slot = d.cur;
  sl.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

const NodeOutput* CudaBackend::output(const Node& n) const {
  const StepPlan* p = impl_->slots[static_cast<size_t>(impl_->reading)].plan;
  if (!p || static_cast<size_t>(n.id) >= p->outputs.size()) return nullptr;
  return p->outputs[static_cast<size_t>(n.id)].get();
}

void CudaBackend::read_logits(const Graph& g, std::vector<float>& out) {
  Impl& d = *impl_;
  const Node& last = g.nodes.back();
  if (!d.last || !d.last->out[static_cast<size_t>(last.id)].get()) fail("read_logits: no step has run");
  const int64_t cols = last.cols();
  if (d.host_logits_n < cols) {
    if (d.host_logits) cudaFreeHost(d.host_logits);
    d.host_logits = nullptr;
    CUDA_CHECK(cudaMallocHost(&d.host_logits, static_cast<size_t>(cols) * sizeof(float)));
    d.host_logits_n = cols;
  }
  const float* src = d.last->out[static_cast<size_t>(last.id)].as<float>() + (last.rows() - 1) * cols;
  const cudaStream_t s = d.lanes[static_cast<size_t>(d.last_lane)];  // the last step's
  CUDA_CHECK(cudaMemcpyAsync(d.host_logits, src, static_cast<size_t>(cols) * sizeof(float), cudaMemcpyDeviceToHost, s));
  cuda::sync_bounded(s, "the step's kernels and the logits copy");
  out.assign(d.host_logits, d.host_logits + cols);
}

int32_t CudaBackend::read_greedy_token(const Graph& g, bool previous) {
  Impl& d = *impl_;
  const Impl::Slot& sl = d.slots[static_cast<size_t>(previous ? d.cur ^ 1 : d.cur)];
  if (!sl.has_token || g.nodes.back().op != Op::Logits) fail("read_greedy_token: no step with logits has run");
  cuda::event_sync_bounded(sl.token_copied, "the step's kernels and the greedy token");
  return *sl.host_token;
}

bool CudaBackend::chains_greedy_token() const { return impl_->chain; }

int64_t CudaBackend::decode_kernels() const { return impl_->decode_graph_nodes; }

MemoryReport CudaBackend::memory() const {
  const Impl& d = *impl_;
  int64_t kv = 0;
  for (const auto& b : d.k_cache) kv += static_cast<int64_t>(b.bytes());
  for (const auto& b : d.v_cache) kv += static_cast<int64_t>(b.bytes());
  const int64_t act = d.peak_plan_bytes;  // node outputs (or arena) and scratch: the peak so far
  MemoryReport r = {{"weights", static_cast<int64_t>(d.weights->weight_bytes())},
                    {"w16_cache", static_cast<int64_t>(d.weights->w16_bytes())},
                    {"kv_cache", kv},
                    {"activations", act},
                    {"cublas_workspace", static_cast<int64_t>(d.cublas_workspace.bytes())}};
  // A paired run's reruns (rerun_node): the largest matmul's output, activations and f16 weight.
  const size_t rerun = d.rerun.y.bytes() + d.rerun.act_q8.bytes() + d.rerun.act_half.bytes() + d.rerun.w16.bytes();
  if (rerun > 0) r.emplace_back("paired_rerun_scratch", static_cast<int64_t>(rerun));
  // Measured, not a category (not part of their sum, see is_memory_measurement): what the driver
  // says is in use on the device now, the CUDA context, cuBLAS and other processes included.
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) r.emplace_back("device_in_use", static_cast<int64_t>(total_b - free_b));
  else cudaGetLastError();  // not sticky: the report goes without the measurement
  return r;
}

double CudaBackend::read_bandwidth_gbs() { return cuda::measure_read_bandwidth_gbs(impl_->stream); }

}  // namespace minfer
