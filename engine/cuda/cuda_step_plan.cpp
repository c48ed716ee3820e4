// The step plan of one graph shape: a buffer per node output (or the shared arena of a prefill
// nobody records), the matmuls' and attention's scratch, the fusion groups (cuda/step_fusion.h).
#include "cuda/cuda_step_plan.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "cuda/argmax.h"
#include "cuda/attention.h"
#include "cuda/cuda_backend_impl.h"
#include "cuda/mmvq.h"
#include "cuda/mmvq_fused.h"
#include "exec/buffer_plan.h"

namespace minfer {

using cuda::DeviceBuffer;
using cuda::DeviceOutput;
using cuda::StepPlan;

namespace {
std::string plan_key(const Graph& g) {
  return std::string(phase_name(g.phase)) + "/" + std::to_string(g.n_tokens) + "/" + std::to_string(g.nodes.size());
}
}  // namespace

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
    p.fusion = cuda::plan_step_fusion(
        g, [this](const Node& n) { return fusable_matvec(n); }, [this](const Node& n) { return residual_matvec(n); });
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
    // weights on matvecs and mmq, f16/bf16 activations for cuBLAS on f16/bf16 (or W16) weights and
    // for matmul_dequant.
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
  // A fused SwiGLU whose output a Q8_1 matvec reads writes that Q8_1 row itself (run_group).
  int64_t swiglu_blocks = 0;
  for (const cuda::FusedGroup& grp : p.fusion.groups)
    if (grp.kind == cuda::FusedKind::NormGateUpSwiglu)
      swiglu_blocks = std::max(swiglu_blocks, g.node(grp.nodes[3]).cols() / 32);
  if (swiglu_blocks > 0) {
    p.swiglu_q8_tickets.alloc(static_cast<size_t>(swiglu_blocks) * sizeof(unsigned int), "SwiGLU Q8_1 block counters");
    CUDA_CHECK(cudaMemsetAsync(p.swiglu_q8_tickets.get(), 0, p.swiglu_q8_tickets.bytes(), stream));
  }
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
  const int64_t widest = opts.fused_max_input > 0 ? std::min(opts.fused_max_input, cuda::kFusedMaxInput) : cuda::kFusedMaxInput;
  return is_quantized(w.type) && cuda::mmvq_supports(w.type) && w.cols <= widest;
}

// The fused matvecs, and past their prologue's width the Q8_1-input matvec with the residual
// epilogue (run_group: quantize_q8_1 + mmvq_residual, one launch fewer than matvec + add).
bool CudaBackend::Impl::residual_matvec(const Node& n) const {
  const cuda::DeviceWeight& w = weights->get(n.weight);
  return fusable_matvec(n) || (is_quantized(w.type) && cuda::mmvq_residual_usable(w.type, w.cols));
}


}  // namespace minfer
