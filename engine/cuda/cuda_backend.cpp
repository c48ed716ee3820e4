#include "cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <map>
#include <span>
#include <string>

#include "core/error.h"
#include "probes/summarize.h"
#include "cuda/argmax.h"
#include "cuda/attention.h"
#include "cuda/cuda_check.h"
#include "cuda/dequant.h"
#include "cuda/device_bandwidth.h"
#include "cuda/device_info.h"
#include "cuda/device_weights.h"
#include "cuda/elementwise.h"
#include "cuda/get_rows.h"
#include "cuda/head_rms_norm.h"
#include "probes/cuda/kernel_profiler.h"
#include "cuda/kv_cache.h"
#include "cuda/launch_settings.h"
#include "probes/cuda/logits_summary.h"
#include "cuda/matmul_f16.h"
#include "cuda/mmq.h"
#include "cuda/mmvq.h"
#include "cuda/mmvq_fused.h"
#include "cuda/mmvq_stream.h"
#include "cuda/quantize.h"
#include "cuda/rms_norm.h"
#include "cuda/rope.h"
#include "cuda/rope_kv.h"
#include "cuda/step_fusion.h"
#include "probes/cuda/summarize.h"
#include "probes/cuda/tensor_compare.h"
#include "exec/buffer_plan.h"

namespace minfer {
namespace {

using cuda::DeviceBuffer;

// The summaries a step computed on the device (inside its CUDA graph when it has one).
struct StepSummaries {
  std::unique_ptr<cuda::DeviceSummaries> ds;
  std::vector<int> index;        // per node id: its tensor in ds, -1 when not summarised
  std::vector<int> node_of;      // per tensor of ds: its node id (node order)
  std::array<bool, 2> live{};    // host slot s holds the summaries of the step launched into it
  int read_slot = 0;             // the slot output() reads (Impl::reading)
  const Observer* observer = nullptr;  // whose node selection `index` follows (wants() is per observer)
};

// A node's output in device memory. Its summary comes from the step's device summaries when the
// step computed them with the asked spec; otherwise from a host copy (summarize_host). The paired
// trace's metrics against another device tensor (the reference backend's output of the node, or
// the node rerun on the reference path) are computed on the device too (cuda/tensor_compare.h):
// only their few bytes come back.
class DeviceOutput final : public NodeOutput {
 public:
  // lanes: the streams a step may run on (the buffer is read after both finished). cmp: the
  // backend's comparison scratch (null: the metrics go through host copies). serial: the
  // backend's count of launched steps (what a cached result belongs to).
  DeviceOutput(const float* d, int64_t rows, int64_t cols, std::array<cudaStream_t, 2> lanes, const StepSummaries* sums,
               int id, cuda::DeviceComparer* cmp, const uint64_t* serial)
      : d_(d), rows_(rows), cols_(cols), lanes_(lanes), sums_(sums), id_(id), cmp_(cmp), serial_(serial) {}
  TensorSummary summarize(const SummarySpec& spec) const override {
    const int i = device_index();
    if (i >= 0 && sums_->ds->spec() == spec) return sums_->ds->read(sums_->read_slot, static_cast<size_t>(i));
    std::vector<float> h = to_host();
    return summarize_host(h.data(), rows_, cols_, spec);
  }
  // On the device when the reference is a device tensor of the same size. A tensor against itself
  // (what rerun_node returns for a node both paths compute alike) is identical by definition: no
  // kernel, when the step's summary says every element is finite (max_abs_at is then 0).
  // Against another step's node output (the reference backend's) the reference's values at this
  // tensor's device outliers come back in the same wait, kept for outliers(k, ref).
  TensorCompare compare_to(const NodeOutput& ref, const CompareTolerance& tol) const override {
    const auto* r = dynamic_cast<const DeviceOutput*>(&ref);
    if (!r || !cmp_ || r->elements() != elements()) return NodeOutput::compare_to(ref, tol);
    const int i = device_index();
    if (r == this && i >= 0) {
      const TensorStats st = sums_->ds->read(sums_->read_slot, static_cast<size_t>(i)).stats;
      if (st.count > 0 && st.nan == 0 && st.inf == 0) {
        TensorCompare same;
        same.max_abs_at = 0;
        return same;
      }
    }
    wait();
    r->wait();
    if (r == this || r->id_ < 0 || i < 0 || sums_->ds->outliers() <= 0)
      return cmp_->compare(d_, r->d_, elements(), tol, lanes_[0]);
    RefOutliers c{r, *serial_, *r->serial_, sums_->read_slot, sums_->ds->read_outliers(sums_->read_slot, static_cast<size_t>(i))};
    std::vector<int64_t> idx;
    for (const Outlier& x : c.outliers) idx.push_back(x.index);
    std::vector<float> v;
    const TensorCompare t = cmp_->compare(d_, r->d_, elements(), tol, lanes_[0], idx, &v);
    for (size_t j = 0; j < c.outliers.size() && j < v.size(); ++j) c.outliers[j].ref_value = v[j];
    if (v.size() == c.outliers.size()) ref_outliers_ = std::move(c);
    return t;
  }
  // The step's device outliers; against a device reference, its values there are gathered on
  // the device (or were, by compare_to against the same reference in the same steps).
  std::vector<Outlier> outliers(int k, const NodeOutput* ref) const override {
    const int i = device_index();
    if (i >= 0 && sums_->ds->outliers() == k) {
      if (!ref) return sums_->ds->read_outliers(sums_->read_slot, static_cast<size_t>(i));
      const auto* r = dynamic_cast<const DeviceOutput*>(ref);
      if (r && cmp_ && r->elements() == elements() && k <= cuda::kMaxGather) {
        const RefOutliers& c = ref_outliers_;
        if (c.ref == r && c.serial == *serial_ && c.ref_serial == *r->serial_ && c.slot == sums_->read_slot)
          return c.outliers;
        std::vector<Outlier> o = sums_->ds->read_outliers(sums_->read_slot, static_cast<size_t>(i));
        if (o.empty()) return o;
        std::vector<int64_t> idx;
        for (const Outlier& x : o) idx.push_back(x.index);
        r->wait();
        const std::vector<float> v = cmp_->gather(r->d_, idx, lanes_[0]);
        for (size_t j = 0; j < o.size(); ++j) o[j].ref_value = v[j];
        return o;
      }
    }
    return NodeOutput::outliers(k, ref);
  }
  BlockScales block_scales(int64_t cols, int block) const override {
    const int i = device_index();
    if (i >= 0 && cols == cols_ && sums_->ds->scale_block(static_cast<size_t>(i)) == block)
      return sums_->ds->read_scales(sums_->read_slot, static_cast<size_t>(i));
    return NodeOutput::block_scales(cols, block);
  }
  std::vector<float> to_host() const override {
    std::vector<float> h(static_cast<size_t>(rows_ * cols_));
    wait();
    CUDA_CHECK(cudaMemcpy(h.data(), d_, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  const float* d_;
  int64_t rows_, cols_;
  std::array<cudaStream_t, 2> lanes_;
  const StepSummaries* sums_;
  int id_;
  cuda::DeviceComparer* cmp_;
  const uint64_t* serial_;
  // The outliers with a reference's values, as compare_to gathered them: valid while neither
  // backend has launched another step and the same host slot is read.
  struct RefOutliers {
    const DeviceOutput* ref = nullptr;
    uint64_t serial = 0, ref_serial = 0;
    int slot = -1;
    std::vector<Outlier> outliers;
  };
  mutable RefOutliers ref_outliers_;

  int64_t elements() const { return rows_ * cols_; }
  // The step that writes the tensor has finished.
  void wait() const {
    for (cudaStream_t s : lanes_) cuda::sync_bounded(s, "the step before reading a node output");
  }
  // This tensor's place in the read step's device summaries; -1 when it has none.
  int device_index() const {
    const StepSummaries& ss = *sums_;
    return id_ >= 0 && ss.live[static_cast<size_t>(ss.read_slot)] && ss.ds ? ss.index[static_cast<size_t>(id_)] : -1;
  }
};

// Everything one graph shape needs on the device: a buffer per node output, the step's inputs,
// scratch for the matmuls and attention, and (decode) the captured CUDA graph.
// A shared-arena plan (an untraced prefill: nobody reads its node outputs after the step) puts
// every node output but the last node's (the logits) into one arena at offsets from
// plan_buffers (exec/buffer_plan.h): outputs whose lifetimes do not overlap share bytes. Only the
// last node keeps a buffer and a DeviceOutput of its own; output() is null for the others.
struct StepPlan {
  std::vector<DeviceBuffer> out;                       // per node id: its own buffer (empty: none)
  std::vector<float*> ptr;                             // per node id: its output (own buffer or arena)
  DeviceBuffer arena;                                  // shared-arena plans: the reused node outputs
  std::vector<std::unique_ptr<DeviceOutput>> outputs;  // per node id (null: not readable after the step)
  DeviceBuffer tokens, positions;                      // int32 [n_tokens], device
  int32_t* host_inputs = nullptr;                      // pinned staging: tokens then positions
  DeviceBuffer act_q8;                                 // Q8_1 activations of the widest matmul input
  // What act_q8 holds in the step being enqueued: matmuls of one input (q/k/v, gate/up on the
  // unfused paths) quantize it once. Reset at the start of every enqueue.
  struct QuantizedInput {
    int node = -1;
    const float* x = nullptr;
    int64_t rows = 0, cols = 0;
    bool operator==(const QuantizedInput&) const = default;
  } act_q8_holds;
  DeviceBuffer act_half;                               // f16/bf16 activations (float GEMM path)
  DeviceBuffer attn_scratch;                           // split-KV partials (decode)
  DeviceBuffer attn_tickets;                           // their per-head merge counters (zeroed once)
  DeviceBuffer argmax;                                 // int32: the logits' argmax (greedy decoding)
  DeviceBuffer argmax_scratch;                         // its partials (zeroed once, see argmax.h)
  // Recorded after a step's input copies (the staging buffer may then be rewritten).
  cudaEvent_t inputs_copied = nullptr;
  cuda::StepFusion fusion;                             // node groups run by one fused kernel
  StepSummaries summaries;                             // traced steps: node summaries on the device
  std::vector<int> act_block;                          // per node id: Impl::activation_block
  // Decode: the step as captured, per recording variant (bit 0: node summaries, bit 1: logits
  // summary, bit 2: the summaries' tail joined into the step's end), with which node launched
  // each captured kernel. A traced step whose kernels CUPTI does not record has its tail as a
  // branch (`kTailJoined` unset): the summaries of the nodes written after the last in-step
  // fork, the logits summary and the host copies run beside the step's end, and the next step
  // waits for the step's main chain only (Impl::enqueue_tail). A graph launch is ordered behind
  // the previous launch of the same executable graph, so such a variant is instantiated once
  // per host slot and consecutive steps alternate between the two, each on its own stream
  // (Impl::lanes); `exec[0]` alone for the others.
  struct Captured {
    std::array<cudaGraphExec_t, 2> exec{};
    cuda::CaptureMap map;
  };
  static constexpr unsigned kTailJoined = 4;
  static bool alternates(unsigned variant) { return (variant & 3) && !(variant & kTailJoined); }
  std::array<Captured, 8> graphs;
  std::unique_ptr<cuda::DeviceLogitsSummary> logits_summary;  // recorded steps: top-k, entropy
  size_t bytes = 0;

  void drop_graph(unsigned v) {
    for (cudaGraphExec_t e : graphs[v].exec)
      if (e) cudaGraphExecDestroy(e);
    graphs[v] = Captured{};
  }
  void drop_graphs(unsigned with_bit) {  // the variants that include `with_bit` (0: all)
    for (unsigned v = 0; v < graphs.size(); ++v)
      if (with_bit == 0 || (v & with_bit)) drop_graph(v);
  }
  ~StepPlan() {
    drop_graphs(0);
    if (inputs_copied) cudaEventDestroy(inputs_copied);
    if (host_inputs) cudaFreeHost(host_inputs);
  }
};

std::string plan_key(const Graph& g) {
  return std::string(phase_name(g.phase)) + "/" + std::to_string(g.n_tokens) + "/" + std::to_string(g.nodes.size());
}

}  // namespace

struct CudaBackend::Impl {
  const Model& m;
  MatmulPath path;
  CudaOptions opts;  // as the program read them (EngineOptions::cuda)
  bool graphs;  // decode steps replayed as one CUDA graph (MINFER_NO_CUDA_GRAPH=1: eager)
  bool fusion;  // fused one-row kernels (MINFER_CUDA_FUSION=0: the unfused reference path)
  bool chain;   // decode steps fed the previous step's argmax on the device (MINFER_CUDA_CHAIN=0: off)
  cudaStream_t stream = nullptr;
  // The streams steps run on: lanes[0] is `stream` (captures, eager steps, untraced steps);
  // traced decode graphs whose tail is a branch alternate between lanes[0] and lanes[1] by host
  // slot, so step N+1 starts when N's main chain ends while N's tail still runs (enter_lane).
  std::array<cudaStream_t, 2> lanes{};
  int last_lane = 0;            // the lane of the last launched step
  bool last_alternated = false;  // that step was such a graph (its ev_end is its main chain's end)
  cudaEvent_t lane_switch = nullptr;
  // Traced steps summarise their nodes on streams forked from `stream` (in the captured graph:
  // parallel branches), part by part as the step computes them (enqueue, join_summaries): one
  // for the small tensors, one for the chunked ones (the logits), so the last part's two run
  // side by side after the LM head.
  std::array<cudaStream_t, 2> side{};
  std::array<bool, 2> side_forked{};  // this step enqueued work on it (join_summaries)
  cudaEvent_t fork_ev = nullptr;
  std::array<cudaEvent_t, 2> join_ev{};
  // Recorded by the tail branch of the graph of host slot k (after its host copies); the next
  // step's graph waits for it before it rewrites what the tail reads (enqueue).
  std::array<cudaEvent_t, 2> tail_done{};
  cublasHandle_t cublas = nullptr;
  DeviceBuffer cublas_workspace;
  std::unique_ptr<cuda::DeviceWeights> weights;
  int64_t n_ctx = 0;
  std::vector<DeviceBuffer> k_cache, v_cache;  // per layer [n_ctx][n_embd_kv] f32
  std::map<std::string, std::unique_ptr<StepPlan>> plans;
  const StepPlan* last = nullptr;
  int64_t peak_plan_bytes = 0;     // the most the step plans held at once (a prefill plan is replaced)
  int64_t decode_graph_nodes = 0;  // kernels (and copies) in the captured decode step
  float* host_logits = nullptr;  // pinned
  int64_t host_logits_n = 0;
  // Recording of the next step to launch (set_recording); none when no observer records it.
  StepRecording rec;
  const Observer* rec_observer = nullptr;
  bool profiling = false;                    // CUPTI collects the last launched step
  bool cupti_on = false;                     // CUPTI's activity kinds are enabled (KernelProfiler::stop)
  // Launched steps alternate between two slots (host copies of their summaries, their events),
  // so step N stays readable while N+1 runs: `cur` is the last launched, `reading` the one
  // output(), gpu_time() and read_logits_summary() read (read_step).
  struct Slot {
    StepPlan* plan = nullptr;
    StepRecording rec;
    bool logits_summary = false;                // the step computed its logits summary
    const cuda::CaptureMap* capture = nullptr;  // the replayed graph's map, null when eager
    // Timed; ev_end is the end of the step's own work (an alternating graph records it inside,
    // before its tail ends).
    cudaEvent_t ev_begin = nullptr, ev_end = nullptr;
    double host_ms = -1;
    // The step's greedy token, copied ahead of its recording (read_greedy_token waits for
    // this copy only); per slot, since a chained step N+1 is launched before N's is read.
    bool has_token = false;
    int32_t* host_token = nullptr;  // pinned
    cudaEvent_t token_copied = nullptr;
  };
  std::array<Slot, 2> slots;
  int cur = 0, reading = 0;
  // The paired trace's metrics on the device (DeviceOutput::compare_to, outliers).
  std::unique_ptr<cuda::DeviceComparer> comparer;
  uint64_t steps_launched = 0;  // run_step calls: what DeviceOutput's cached results belong to
  // rerun_node's scratch: a MatMul of the last step run again on the other matmul path, on the
  // last step's lane after it, from the node's input as the step left it. The f16 path
  // dequantizes the node's weight into `w16` (this backend has no W16 cache on the MMQ path;
  // the same kernel builds the reference's cache, so the rerun is what the reference computes
  // from these inputs).
  struct Rerun {
    DeviceBuffer y, act_q8, act_half, w16;
    std::string w16_of;  // the weight `w16` holds ("" none)
    StepSummaries none;  // a rerun output has no device summary
    std::unique_ptr<DeviceOutput> out;
    cudaEvent_t done = nullptr;
    bool pending = false;  // enqueued since the last step: the next step waits for `done`
  } rerun;
  // Whether a MatMul/Logits node computes differently on `p` than on this backend's path: a
  // quantized weight on more than one row (mmq against dequant + cuBLAS). One-row matmuls
  // (decode, the LM head) take the same matvec on both paths, float weights the same cuBLAS GEMM.
  bool path_dependent(const Node& n, MatmulPath p) const {
    if ((n.op != Op::MatMul && n.op != Op::Logits) || n.weight.empty() || p == path || n.rows() == 1) return false;
    return is_quantized(weights->get(n.weight).type);
  }
  const NodeOutput* rerun_matmul(const Graph& g, const Node& n, MatmulPath p, StepPlan& plan);

  Impl(const Model& model, MatmulPath p, const CudaOptions& o)
      : m(model), path(p), opts(o), graphs(o.step_graphs), fusion(o.step_fusion), chain(o.chain) {}
  ~Impl() {
    // A chained step launched past the end of a generation may still run: nothing it uses is
    // freed before it ends.
    try {
      if (lanes[1]) sync_all("the steps in flight before the backend is destroyed");
    } catch (...) {  // a failed device: free what can be freed
    }
    if (cupti_on) cuda::KernelProfiler::get().stop();
    plans.clear();
    for (Slot& sl : slots) {
      if (sl.ev_begin) cudaEventDestroy(sl.ev_begin);
      if (sl.ev_end) cudaEventDestroy(sl.ev_end);
      if (sl.host_token) cudaFreeHost(sl.host_token);
      if (sl.token_copied) cudaEventDestroy(sl.token_copied);
    }
    if (host_logits) cudaFreeHost(host_logits);
    if (rerun.done) cudaEventDestroy(rerun.done);
    if (cublas) cublasDestroy(cublas);
    for (cudaEvent_t e : {fork_ev, lane_switch, join_ev[0], join_ev[1], tail_done[0], tail_done[1]})
      if (e) cudaEventDestroy(e);
    for (cudaStream_t s : side)
      if (s) cudaStreamDestroy(s);
    for (cudaStream_t s : lanes)
      if (s) cudaStreamDestroy(s);
  }

  void check_weight_types() const;
  StepPlan& plan_for(const Graph& g, bool shared = false);
  bool outputs_private(const Graph& g) const;
  // Both lanes and the side streams have finished.
  void sync_all(const char* what) {
    for (cudaStream_t s : lanes)
      if (s) cuda::sync_bounded(s, what);
    for (cudaStream_t s : side)
      if (s) cuda::sync_bounded(s, what);
  }
  // Before a step's first work on `lane`: what it must wait for of the last step when that ran
  // on the other lane (an alternating graph after another: that step's main chain; else all).
  void enter_lane(int lane, bool alternating) {
    if (lane != last_lane) {
      cudaEvent_t e = slots[static_cast<size_t>(cur ^ 1)].ev_end;
      if (!(alternating && last_alternated)) {
        CUDA_CHECK(cudaEventRecord(lane_switch, lanes[static_cast<size_t>(last_lane)]));
        e = lane_switch;
      }
      CUDA_CHECK(cudaStreamWaitEvent(lanes[static_cast<size_t>(lane)], e, 0));
    }
    last_lane = lane;
    last_alternated = alternating;
  }
  size_t enqueue(const Graph& g, StepPlan& p, cuda::CaptureRecorder* cap, unsigned variant, cudaEvent_t tail_wait);
  void enqueue_tail(const Graph& g, StepPlan& p, unsigned variant, size_t tail_first, int k);
  void prepare_summaries(const Graph& g, StepPlan& p);
  void fork_summaries(StepPlan& p, size_t first, size_t end, cuda::CaptureRecorder* cap);
  void join_summaries();
  bool prepare_logits_summary(const Graph& g, StepPlan& p);
  void enqueue_logits_summary(const Graph& g, StepPlan& p, cuda::CaptureRecorder* cap, cudaStream_t s);
  void capture(const Graph& g, StepPlan& p, unsigned variant, bool with_map);  // into p.graphs[variant]
  void run_node(const Graph& g, const Node& n, StepPlan& p);
  void run_group(const Graph& g, const cuda::FusedGroup& grp, StepPlan& p);
  bool fusable_matvec(const Node& n) const;
  int activation_block(const Node& n) const;
  static float* out(StepPlan& p, int id) { return p.ptr[static_cast<size_t>(id)]; }
  static const float* input(const Graph& g, const Node& n, size_t i, StepPlan& p) {
    const Node& s = g.node(n.src.at(i));
    if (!s.has_output) fail("node '", n.name, "' reads '", s.name, "', which has no output buffer");
    return out(p, s.id);
  }
  void matmul(const Node& n, const float* x, float* y, const float* bias, StepPlan& p);
};

CudaBackend::CudaBackend(const Model& m, MatmulPath path, const CudaOptions& options)
    : impl_(std::make_unique<Impl>(m, path, options)) {
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
  if (path == MatmulPath::Float) impl_->weights->build_w16_cache(m, impl_->stream);
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

// Node outputs nobody reads after the step: a prefill with no observer, or whose observer reads
// no nodes and no summaries of it (minfer-bench's kernel probe, a trace whose steps leave the
// prefill out). Such a step may use a shared arena: one buffer per node of a 4096-token 7B
// prefill is 41.7 GB (docs/benchmarks.md, session 17), the arena a few.
bool CudaBackend::Impl::outputs_private(const Graph& g) const {
  return g.phase == Phase::Prefill && (rec_observer == nullptr || (!rec.nodes && !rec.summaries));
}

StepPlan& CudaBackend::Impl::plan_for(const Graph& g, bool shared) {
  const std::string key = plan_key(g) + (shared ? "/shared" : "");
  auto it = plans.find(key);
  if (it != plans.end()) return *it->second;
  // A step may still run (run_step does not wait for the previous one): plans are freed below.
  sync_all("the steps in flight before a new step plan");
  if (g.phase == Phase::Prefill)  // one prefill shape at a time: prompt lengths vary, memory does not grow
    for (auto p = plans.begin(); p != plans.end();)
      p = p->first.rfind("prefill", 0) == 0 ? plans.erase(p) : std::next(p);
  auto plan = std::make_unique<StepPlan>();
  StepPlan& p = *plan;
  p.out.resize(g.nodes.size());
  p.ptr.assign(g.nodes.size(), nullptr);
  p.outputs.resize(g.nodes.size());
  // Fusion first: a fused group reads its inputs and writes every member's output in the launch
  // of its last node, which is where the arena's lifetimes are measured.
  if (fusion)
    p.fusion = cuda::plan_step_fusion(g, [this](const Node& n) { return fusable_matvec(n); });
  const int last_id = g.nodes.back().id;
  BufferPlan arena;
  if (shared) {
    BufferPlanOptions o;
    o.live_to_end = {last_id};  // the logits: read_logits / the argmax read them after the step
    o.external = {last_id};     // ... from a buffer of their own
    o.position.resize(g.nodes.size());
    for (const Node& n : g.nodes) {
      const int gi = p.fusion.group_of.empty() ? -1 : p.fusion.group_of[static_cast<size_t>(n.id)];
      o.position[static_cast<size_t>(n.id)] = gi < 0 ? n.id : p.fusion.groups[static_cast<size_t>(gi)].last;
      // SwiGLU and Add run alone as map_kernel, which reads each index before writing it: their
      // output may take the bytes of the source they are the last reader of (the 7B prefill's
      // n_ff-wide gate: 310 MB at 4096 tokens).
      if (gi < 0 && (n.op == Op::SwiGLU || n.op == Op::Add)) o.in_place.push_back(n.id);
    }
    arena = plan_buffers(g, o);
    if (const std::string why = check_buffer_plan(g, arena); !why.empty()) fail("cuda: activation arena plan: ", why);
    p.arena.alloc(arena.arena_bytes, "the shared activation arena of a " + std::to_string(g.n_tokens) + "-token prefill");
    p.bytes += p.arena.bytes();
  }
  int64_t widest_q8 = 0, widest_half = 0;
  for (const Node& n : g.nodes) {
    if (!n.executed()) continue;
    const size_t i = static_cast<size_t>(n.id);
    if (has_output_buffer(n)) {
      if (shared && n.id != last_id) {
        p.ptr[i] = reinterpret_cast<float*>(p.arena.as<uint8_t>() + arena.offset[i]);
      } else {
        const size_t bytes = output_buffer_bytes(n);
        p.out[i].alloc(bytes, "the output of node '" + n.name + "'");
        p.ptr[i] = p.out[i].as<float>();
        p.bytes += bytes;
        p.outputs[i] =
            std::make_unique<DeviceOutput>(p.ptr[i], n.rows(), n.cols(), lanes, &p.summaries, n.id, comparer.get(), &steps_launched);
      }
    }
    // Matmul scratch, only where a kernel reads it (Impl::matmul): Q8_1 activations for quantized
    // weights on matvecs and mmq, f16/bf16 activations for cuBLAS on f16/bf16 (or W16) weights.
    if (n.op == Op::MatMul || n.op == Op::Logits) {
      const int64_t n_in = g.node(n.src[0]).cols();
      const WeightType t = weights->get(n.weight).type;
      if (is_quantized(t) && (n.rows() == 1 || path == MatmulPath::MMQ))
        widest_q8 = std::max(widest_q8, n.rows() * n_in / 32 * 36);  // BlockQ8_1: 36 bytes per 32
      if (n.rows() > 1 && (is_quantized(t) ? path == MatmulPath::Float : t != WeightType::F32))
        widest_half = std::max(widest_half, n.rows() * n_in * 2);
    }
  }
  p.act_q8.alloc(static_cast<size_t>(widest_q8), "quantized activations (Q8_1)");
  p.act_half.alloc(static_cast<size_t>(widest_half), "f16 activations");
  p.tokens.alloc(static_cast<size_t>(g.n_tokens) * sizeof(int32_t), "token ids");
  p.positions.alloc(static_cast<size_t>(g.n_tokens) * sizeof(int32_t), "positions");
  CUDA_CHECK(cudaMallocHost(&p.host_inputs, 2 * static_cast<size_t>(g.n_tokens) * sizeof(int32_t)));
  p.argmax.alloc(sizeof(int32_t), "the greedy token");
  p.argmax_scratch.alloc(cuda::argmax_scratch_bytes(), "the greedy token's scratch");
  CUDA_CHECK(cudaMemsetAsync(p.argmax_scratch.get(), 0, p.argmax_scratch.bytes(), stream));
  CUDA_CHECK(cudaEventCreateWithFlags(&p.inputs_copied, cudaEventDisableTiming));
  const HParams& h = m.hp;
  // Split-KV partials: only one-row attention (decode, a one-token prefill) uses them.
  const bool split_kv = std::any_of(g.nodes.begin(), g.nodes.end(),
                                    [](const Node& n) { return n.executed() && n.op == Op::Attention && n.rows() == 1; });
  if (split_kv) {
    p.attn_scratch.alloc(static_cast<size_t>(cuda::attention_decode_scratch_floats(h.n_head, h.head_dim, n_ctx)) * sizeof(float),
                         "split-KV attention scratch");
    p.attn_tickets.alloc(static_cast<size_t>(cuda::attention_decode_tickets(h.n_head)) * sizeof(unsigned int),
                         "split-KV attention merge counters");
    CUDA_CHECK(cudaMemsetAsync(p.attn_tickets.get(), 0, p.attn_tickets.bytes(), stream));
  }
  p.bytes += p.act_q8.bytes() + p.act_half.bytes() + p.attn_scratch.bytes();
  p.act_block.resize(g.nodes.size());
  for (const Node& n : g.nodes) p.act_block[static_cast<size_t>(n.id)] = activation_block(n);
  auto& slot = plans[key];
  slot = std::move(plan);
  int64_t held = 0;
  for (const auto& [k, q] : plans) held += static_cast<int64_t>(q->bytes);
  peak_plan_bytes = std::max(peak_plan_bytes, held);
  return *slot;
}

std::string CudaBackend::matmul_kernel(const Node& n) const {
  const cuda::DeviceWeight& w = impl_->weights->get(n.weight);
  const bool q = is_quantized(w.type);
  if (n.rows() == 1) return q ? "mmvq (activations as Q8_1)" : std::string("gemv ") + minfer::name(w.type);
  if (q && impl_->path == MatmulPath::MMQ) return "mmq (activations as Q8_1, int8 tensor cores)";
  if (q) return "cublas f16 gemm (W16 cache)";
  return w.type == WeightType::F32 ? "cublas f32 gemm" : std::string("cublas ") + minfer::name(w.type) + " gemm";
}

void CudaBackend::Impl::matmul(const Node& n, const float* x, float* y, const float* bias, StepPlan& p) {
  const cuda::DeviceWeight& w = weights->get(n.weight);
  const int64_t nt = n.rows();
  // Quantizes x into act_q8 unless it already holds it (the previous matmul had the same input).
  auto quantized = [&] {
    const StepPlan::QuantizedInput want{n.src[0], x, nt, w.cols};
    if (p.act_q8_holds != want) cuda::quantize_q8_1(x, nt, w.cols, p.act_q8.get(), stream);
    p.act_q8_holds = want;
    return p.act_q8.get();
  };
  if (nt == 1) {  // decode, and the LM head on the last row: matvec on the stored weights
    if (is_quantized(w.type)) {
      quantized();
      cuda::mmvq(w.type, w.data, w.rows, w.cols, p.act_q8.get(), bias, y, stream);
    } else {
      cuda::gemv_float(w.type, w.data, w.rows, w.cols, x, bias, y, stream);
    }
    return;
  }
  if (is_quantized(w.type) && path == MatmulPath::MMQ) {
    cuda::mmq_with_tile(w.type, w.data, w.rows, w.cols, quantized(), nt, bias, y, opts.mmq_tile, stream);
    return;
  }
  if (is_quantized(w.type) && !w.w16) fail("cuda: weight '", n.weight, "' has no W16 cache copy");
  const WeightType gemm_type = is_quantized(w.type) ? WeightType::F16 : w.type;
  cuda::matmul_float_weights(cublas, gemm_type, w.w16 ? static_cast<const void*>(w.w16) : w.data, w.rows, w.cols, x,
                             nt, p.act_half.get(), y, stream);
  if (bias) cuda::add_bias(y, bias, y, nt, w.rows, stream);
}

void CudaBackend::Impl::run_node(const Graph& g, const Node& n, StepPlan& p) {
  auto in = [&](size_t i) { return input(g, n, i, p); };
  float* y = n.has_output ? out(p, n.id) : nullptr;
  const int64_t rows = n.rows(), cols = n.cols();
  const HParams& h = m.hp;
  const int32_t* pos = p.positions.as<int32_t>();
  switch (n.op) {
    case Op::Input:
      break;
    case Op::GetRows: {
      const cuda::DeviceWeight& w = weights->get(n.weight);
      cuda::get_rows(w.type, w.data, w.rows, w.cols, p.tokens.as<int32_t>(), rows, y, stream);
      break;
    }
    case Op::RmsNorm:
      cuda::rms_norm(in(0), weights->f32(n.weight), y, rows, cols, static_cast<float>(h.rms_eps), stream);
      break;
    case Op::MatMul:
    case Op::Logits:
      matmul(n, in(0), y, n.bias.empty() ? nullptr : weights->f32(n.bias), p);
      break;
    case Op::AddBias:
      cuda::add_bias(in(0), weights->f32(n.bias), y, rows, cols, stream);
      break;
    case Op::HeadRmsNorm:  // qwen3's QK-norm: rows * n_heads rows of head_dim
      cuda::head_rms_norm(in(0), weights->f32(n.weight), y, rows, cols / h.head_dim, h.head_dim,
                          static_cast<float>(h.rms_eps), stream);
      break;
    case Op::Rope:  // NeoX (qwen2, qwen3)
    case Op::RopeNormal: {  // adjacent pairs (llama); both with rope_freqs divisors when the node has them
      const float* divisors = n.weight.empty() ? nullptr : weights->f32(n.weight);
      const auto rope = n.op == Op::Rope ? cuda::rope_neox : cuda::rope_normal;
      rope(in(0), pos, y, rows, cols / h.head_dim, h.head_dim, h.rope_base, stream, divisors);
      break;
    }
    case Op::KvStore:
      cuda::kv_store(in(0), in(1), pos, g.n_tokens, h.n_embd_kv(), k_cache.at(static_cast<size_t>(n.layer)).as<float>(),
                     v_cache.at(static_cast<size_t>(n.layer)).as<float>(), n_ctx, stream);
      break;
    case Op::Attention: {
      const float* kc = k_cache.at(static_cast<size_t>(n.layer)).as<float>();
      const float* vc = v_cache.at(static_cast<size_t>(n.layer)).as<float>();
      if (rows == 1)  // decode: split over the KV length read from device memory
        cuda::attention_decode(in(0), pos, kc, vc, y, h.n_head, h.n_head_kv, h.head_dim, n_ctx,
                               p.attn_scratch.as<float>(), p.attn_tickets.as<unsigned int>(), stream);
      else
        cuda::attention_prefill(in(0), pos, kc, vc, y, rows, h.n_head, h.n_head_kv, h.head_dim, stream);
      break;
    }
    case Op::Add:
      cuda::add(in(0), in(1), y, rows * cols, stream);
      break;
    case Op::Silu:
      cuda::silu(in(0), y, rows * cols, stream);
      break;
    case Op::Mul:
      cuda::mul(in(0), in(1), y, rows * cols, stream);
      break;
    case Op::SwiGLU:
      cuda::swiglu(in(0), in(1), y, rows * cols, stream);
      break;
    case Op::LastRow:
      cuda::copy_row(in(0), g.node(n.src[0]).rows() - 1, cols, y, stream);
      break;
  }
}

// The paired trace's local error: node n of the last step on path `p`, from the step's own
// inputs. A node that computes alike on both paths (every op but a quantized matmul on more than
// one row; see path_dependent) is its own rerun: its output as it is, so its local error is
// exactly 0, as the CPU backend's rerun of it gives. Only the last launched step: a pipelined run
// that has launched the next step (read_step(previous)) has rewritten its inputs; the generation
// loop never pipelines a paired run (its logits are read on the host for both samplers).
const NodeOutput* CudaBackend::rerun_node(const Graph& g, const Node& n, MatmulPath path) {
  Impl& d = *impl_;
  if (!n.executed() || !n.has_output || n.op == Op::Input) return nullptr;
  StepPlan* p = d.slots[static_cast<size_t>(d.reading)].plan;
  if (!p || static_cast<size_t>(n.id) >= p->outputs.size() || p->ptr[static_cast<size_t>(n.id)] == nullptr)
    fail("rerun_node: node '", n.name, "' is not in the last step");
  const NodeOutput* own = p->outputs[static_cast<size_t>(n.id)].get();
  if (!own) return nullptr;  // not kept after the step (a prefill nobody records shares one arena)
  if (!d.path_dependent(n, path)) return own;
  if (d.reading != d.cur)
    fail("rerun_node: node '", n.name, "' of the step before the last one: the last step has rewritten its inputs");
  return d.rerun_matmul(g, n, path, *p);
}

const NodeOutput* CudaBackend::Impl::rerun_matmul(const Graph& g, const Node& n, MatmulPath p, StepPlan& plan) {
  const Node& src = g.node(n.src.at(0));
  if (!plan.outputs[static_cast<size_t>(src.id)]) return nullptr;  // its input was not kept
  const float* x = plan.ptr[static_cast<size_t>(src.id)];
  const cuda::DeviceWeight& w = weights->get(n.weight);
  const int64_t nt = n.rows();
  if (w.rows != n.cols() || w.cols != src.cols())
    fail("rerun_node: node '", n.name, "' is ", nt, "x", n.cols(), " from ", src.cols(), " columns, its weight ", w.rows,
         "x", w.cols);
  // Scratch grows to the largest matmul asked (cudaFree waits for the device: no rerun in flight
  // reads a freed buffer).
  auto room = [](DeviceBuffer& b, size_t bytes, const char* what) {
    if (b.bytes() >= bytes) return false;
    b.alloc(bytes, what);
    return true;
  };
  room(rerun.y, static_cast<size_t>(nt * w.rows) * sizeof(float), "the rerun node's output (paired trace)");
  float* y = rerun.y.as<float>();
  const float* bias = n.bias.empty() ? nullptr : weights->f32(n.bias);
  const cudaStream_t s = lanes[static_cast<size_t>(last_lane)];  // after the step, in order
  if (p == MatmulPath::MMQ) {
    if (!cuda::mmq_supports(w.type))
      fail("rerun_node: weight '", n.weight, "' has type ", minfer::name(w.type), ", which the mmq kernel does not support");
    room(rerun.act_q8, static_cast<size_t>(nt * w.cols / 32 * 36), "the rerun's Q8_1 activations (paired trace)");
    cuda::quantize_q8_1(x, nt, w.cols, rerun.act_q8.get(), s);
    cuda::mmq_with_tile(w.type, w.data, w.rows, w.cols, rerun.act_q8.get(), nt, bias, y, opts.mmq_tile, s);
  } else {
    if (room(rerun.w16, static_cast<size_t>(w.rows * w.cols) * sizeof(__half), "the rerun's f16 weight (paired trace)"))
      rerun.w16_of.clear();
    room(rerun.act_half, static_cast<size_t>(nt * w.cols) * 2, "the rerun's f16 activations (paired trace)");
    if (rerun.w16_of != n.weight) {
      cuda::dequant_to_f16(w.type, w.data, w.rows, w.cols, rerun.w16.as<__half>(), s);
      rerun.w16_of = n.weight;
    }
    cuda::matmul_float_weights(cublas, WeightType::F16, rerun.w16.get(), w.rows, w.cols, x, nt, rerun.act_half.get(),
                               y, s);
    if (bias) cuda::add_bias(y, bias, y, nt, w.rows, s);
  }
  CUDA_CHECK(cudaEventRecord(rerun.done, s));
  rerun.pending = true;
  rerun.out = std::make_unique<DeviceOutput>(y, nt, w.rows, std::array<cudaStream_t, 2>{s, s}, &rerun.none, -1,
                                             comparer.get(), &steps_launched);
  return rerun.out.get();
}

// Quantized weights read 8-bit activations (Q8_1, 32-element blocks) in mmvq and mmq; the f16
// prefill path and float weights read float activations.
int CudaBackend::Impl::activation_block(const Node& n) const {
  if ((n.op != Op::MatMul && n.op != Op::Logits) || n.weight.empty()) return 0;
  if (!is_quantized(weights->get(n.weight).type)) return 0;
  return n.rows() == 1 || path == MatmulPath::MMQ ? 32 : 0;
}

int CudaBackend::activation_block(const Node& n) const {
  const StepPlan* p = impl_->last;  // the per-plan copy: no weight lookup per node and step
  if (p && static_cast<size_t>(n.id) < p->act_block.size()) return p->act_block[static_cast<size_t>(n.id)];
  return impl_->activation_block(n);
}

bool CudaBackend::Impl::fusable_matvec(const Node& n) const {
  const cuda::DeviceWeight& w = weights->get(n.weight);
  return is_quantized(w.type) && cuda::mmvq_supports(w.type) && w.cols <= cuda::kFusedMaxInput;
}

void CudaBackend::Impl::run_group(const Graph& g, const cuda::FusedGroup& grp, StepPlan& p) {
  const HParams& h = m.hp;
  const float eps = static_cast<float>(h.rms_eps);
  auto matvec_out = [&](const Node& mv) {
    const cuda::DeviceWeight& w = weights->get(mv.weight);
    return cuda::FusedMatvecOut{w.type, w.data, w.rows, mv.bias.empty() ? nullptr : weights->f32(mv.bias),
                                out(p, mv.id), nullptr, nullptr};
  };
  switch (grp.kind) {
    case cuda::FusedKind::NormMatvecs: {  // rms_norm -> q/k/v (or the LM head), + biases
      const Node& norm = g.node(grp.nodes[0]);
      std::vector<cuda::FusedMatvecOut> outs;
      for (size_t i = 1; i < grp.nodes.size(); ++i) outs.push_back(matvec_out(g.node(grp.nodes[i])));
      cuda::mmvq_fused(input(g, norm, 0, p), norm.cols(), weights->f32(norm.weight), eps, out(p, norm.id), outs.data(),
                       static_cast<int>(outs.size()), stream);
      break;
    }
    case cuda::FusedKind::NormGateUpSwiglu: {  // rms_norm -> gate, up -> silu(gate) * up
      const Node &norm = g.node(grp.nodes[0]), &gate = g.node(grp.nodes[1]), &up = g.node(grp.nodes[2]);
      const Node& sw = g.node(grp.nodes[3]);
      const cuda::DeviceWeight &wg = weights->get(gate.weight), &wu = weights->get(up.weight);
      cuda::mmvq_swiglu_fused(input(g, norm, 0, p), norm.cols(), weights->f32(norm.weight), eps, out(p, norm.id), wg.type,
                              wg.data, wu.data, wg.rows, out(p, gate.id), out(p, up.id), out(p, sw.id), stream);
      break;
    }
    case cuda::FusedKind::MatvecResidual: {  // matvec (+ bias), then + residual
      const Node &mv = g.node(grp.nodes[0]), &add = g.node(grp.nodes[1]);
      cuda::FusedMatvecOut o = matvec_out(mv);
      o.residual = out(p, add.src[0] == mv.id ? add.src[1] : add.src[0]);
      o.y_plus_residual = out(p, add.id);
      cuda::mmvq_fused(input(g, mv, 0, p), weights->get(mv.weight).cols, nullptr, eps, nullptr, &o, 1, stream);
      break;
    }
    case cuda::FusedKind::RopeKv:       // q rope, k rope, K/V into the cache at the step's position
    case cuda::FusedKind::NormRopeKv: {  // the same after qwen3's per-head norms of q and k
      const bool norm = grp.kind == cuda::FusedKind::NormRopeKv;
      const size_t r = norm ? 2 : 0;  // the rope nodes' place in the group
      const Node &qr = g.node(grp.nodes[r]), &kr = g.node(grp.nodes[r + 1]), &kv = g.node(grp.nodes[r + 2]);
      cuda::RopeKvStore a;
      if (norm) {
        const Node &qn = g.node(grp.nodes[0]), &kn = g.node(grp.nodes[1]);
        a.q = input(g, qn, 0, p), a.k = input(g, kn, 0, p);
        a.q_norm_w = weights->f32(qn.weight), a.k_norm_w = weights->f32(kn.weight), a.eps = eps;
        a.q_normed = out(p, qn.id), a.k_normed = out(p, kn.id);
      } else {
        a.q = input(g, qr, 0, p), a.k = input(g, kr, 0, p);
      }
      a.v = input(g, kv, 1, p), a.pos = p.positions.as<int32_t>();
      a.n_head = h.n_head, a.n_head_kv = h.n_head_kv, a.head_dim = h.head_dim, a.base = h.rope_base;
      a.mode = qr.op == Op::Rope ? RopeMode::NeoX : RopeMode::Normal;
      a.freq_divisors = qr.weight.empty() ? nullptr : weights->f32(qr.weight);  // k's is the same (step_fusion)
      a.q_rope = out(p, qr.id), a.k_rope = out(p, kr.id);
      a.k_cache = k_cache.at(static_cast<size_t>(kv.layer)).as<float>();
      a.v_cache = v_cache.at(static_cast<size_t>(kv.layer)).as<float>();
      a.n_ctx = n_ctx;
      cuda::rope_kv_store(a, stream);
      break;
    }
  }
}

// Every node's launches, in graph order. While CUPTI collects an eager step each node's launches
// carry its id; during capture `cap` notes where each node's work ends. With node summaries
// (variant bit 0) the recorded nodes are summarised on the side streams in about kSummaryParts
// parts, each forked as soon as its nodes are written, so the summaries run beside the rest of
// the step instead of after it; join_summaries() ends the branch. An alternating graph
// (captured with `tail_wait`) leaves the last part (the nodes written after the last fork: the
// LM head's and a few before it) to its tail branch (enqueue_tail); the return value is its
// first tensor (the tensor count when there is none).
// The previous step's tail reads the buffers of its own last part, the logits and the argmax,
// and copies the summaries' record buffer to the host: an alternating graph waits for that tail
// (`tail_wait`, an external event-wait node) before its first fork (which writes records) and
// before it writes any of those buffers. Every tensor of a last part lies at or past the first
// part's end, so the wait comes after about a sixth of the step, long after the tail (~40 us)
// is done. Every other step waits for the whole previous step before it starts (enter_lane),
// so it has no tail to wait for.
size_t CudaBackend::Impl::enqueue(const Graph& g, StepPlan& p, cuda::CaptureRecorder* cap, unsigned variant, cudaEvent_t tail_wait) {
  constexpr size_t kSummaryParts = 6;
  const bool summaries = variant & 1, defer_tail = tail_wait != nullptr;
  const std::vector<int>& node_of = p.summaries.node_of;
  const size_t part = summaries ? std::max<size_t>(1, (node_of.size() + kSummaryParts - 1) / kSummaryParts) : 0;
  std::vector<char> written(summaries ? g.nodes.size() : 0, 0);
  p.act_q8_holds = {};  // a new step's inputs
  bool waited = !defer_tail;
  auto wait_for_tail = [&] {
    if (waited) return;
    // A node of the graph: each launch waits for the last tail launched before it.
    CUDA_CHECK(cudaStreamWaitEvent(stream, tail_wait, cudaEventWaitExternal));
    waited = true;
  };
  auto may_be_read_by_a_tail = [&](int id) {
    if (g.node(id).op == Op::Logits) return true;
    return summaries && p.summaries.index[static_cast<size_t>(id)] >= static_cast<int>(part);
  };
  size_t forked = 0, ready = 0;  // tensors [0, forked) are being summarised; [0, ready) are written
  auto wrote = [&](int id) {
    if (!summaries) return;
    written[static_cast<size_t>(id)] = 1;
    while (ready < node_of.size() && written[static_cast<size_t>(node_of[ready])]) ++ready;
    if (ready - forked >= part) {
      wait_for_tail();
      fork_summaries(p, forked, ready, cap);
      forked = ready;
    }
  };
  for (const Node& n : g.nodes) {
    if (!n.executed()) continue;
    const int gi = p.fusion.group_of.empty() ? -1 : p.fusion.group_of[static_cast<size_t>(n.id)];
    if (gi >= 0 && p.fusion.groups[static_cast<size_t>(gi)].last != n.id) continue;  // runs with its group
    // The nodes this launch writes: the node, or its fused group.
    const std::span<const int> ids = gi < 0 ? std::span<const int>(&n.id, 1)
                                            : std::span<const int>(p.fusion.groups[static_cast<size_t>(gi)].nodes);
    for (int id : ids)
      if (may_be_read_by_a_tail(id)) wait_for_tail();
    {
      cuda::KernelProfiler::NodeScope scope(profiling && !cap, n.id);
      if (gi < 0) run_node(g, n, p);
      else run_group(g, p.fusion.groups[static_cast<size_t>(gi)], p);
    }
    if (cap) cap->mark(n.id);
    for (int id : ids) wrote(id);
  }
  if (summaries && !defer_tail && forked < node_of.size()) {
    wait_for_tail();
    fork_summaries(p, forked, node_of.size(), cap);
    forked = node_of.size();
  }
  // The greedy token, in the step: a greedy run reads 4 bytes instead of the logits row.
  const Node& last = g.nodes.back();
  if (last.op == Op::Logits) {
    cuda::KernelProfiler::NodeScope scope(profiling && !cap, last.id);
    cuda::argmax(out(p, last.id) + (last.rows() - 1) * last.cols(), last.cols(), p.argmax.as<int32_t>(),
                 p.argmax_scratch.get(), stream);
    if (cap) cap->mark(last.id);
  }
  return forked;
}

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

std::optional<LogitsSummary> CudaBackend::read_logits_summary(const Graph& g) {
  Impl& d = *impl_;
  const Impl::Slot& sl = d.slots[static_cast<size_t>(d.reading)];
  if (!sl.plan || !sl.logits_summary || g.nodes.back().op != Op::Logits) return std::nullopt;
  return sl.plan->logits_summary->read(d.reading);
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
