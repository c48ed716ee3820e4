// Per-node dispatch: every executed node (or fused group) of a step to its launcher, in graph
// order (Impl::enqueue), with the in-step summaries forked as their nodes are written.
#include <cuda_runtime.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/argmax.h"
#include "cuda/attention.h"
#include "cuda/convert.h"
#include "cuda/cuda_backend_impl.h"
#include "cuda/elementwise.h"
#include "cuda/get_rows.h"
#include "cuda/head_rms_norm.h"
#include "cuda/kv_cache.h"
#include "cuda/matmul_dequant.h"
#include "cuda/matmul_f16.h"
#include "cuda/mmq.h"
#include "cuda/mmvq.h"
#include "cuda/mmvq_fused.h"
#include "cuda/quantize.h"
#include "cuda/rms_norm.h"
#include "cuda/rope.h"
#include "cuda/rope_kv.h"

namespace minfer {

using cuda::DeviceBuffer;
using cuda::DeviceOutput;
using cuda::StepPlan;

std::string CudaBackend::matmul_kernel(const Node& n) const {
  const cuda::DeviceWeight& w = impl_->weights->get(n.weight);
  const bool q = is_quantized(w.type);
  if (n.rows() == 1) return q ? "mmvq (activations as Q8_1)" : std::string("gemv ") + minfer::name(w.type);
  if (q && impl_->path == MatmulPath::MMQ) return "mmq (activations as Q8_1, int8 tensor cores)";
  if (q && !w.w16) return "matmul_dequant (f16 wgmma, weights dequantized in the kernel)";
  if (q) return "cublas f16 gemm (W16 cache)";
  return w.type == WeightType::F32 ? "cublas f32 gemm" : std::string("cublas ") + minfer::name(w.type) + " gemm";
}

// Quantizes x into act_q8 unless it already holds it (the previous matmul had the same input).
const void* CudaBackend::Impl::quantized_input(const Node& n, const float* x, int64_t cols, StepPlan& p) {
  const StepPlan::HeldInput want{n.src[0], x, n.rows(), cols};
  if (p.act_q8_holds != want) cuda::quantize_q8_1(x, n.rows(), cols, p.act_q8.get(), stream);
  p.act_q8_holds = want;
  return p.act_q8.get();
}

void CudaBackend::Impl::matmul(const Node& n, const float* x, float* y, const float* bias, StepPlan& p) {
  const cuda::DeviceWeight& w = weights->get(n.weight);
  const int64_t nt = n.rows();
  auto quantized = [&] { return quantized_input(n, x, w.cols, p); };
  if (nt == 1) {  // decode, and the LM head on the last row: matvec on the stored weights
    if (is_quantized(w.type)) {
      cuda::mmvq(w.type, w.data, w.rows, w.cols, quantized(), bias, y, stream);
    } else {
      cuda::gemv_float(w.type, w.data, w.rows, w.cols, x, bias, y, stream);
    }
    return;
  }
  if (is_quantized(w.type) && path == MatmulPath::MMQ) {
    cuda::mmq_with_tile(w.type, w.data, w.rows, w.cols, quantized(), nt, bias, y, opts.mmq_tile, stream);
    return;
  }
  if (is_quantized(w.type) && !w.w16) {  // build_w16_cache left it to matmul_dequant
    const StepPlan::HeldInput want{n.src[0], x, nt, w.cols};
    if (p.act_half_holds != want) cuda::f32_to_f16(x, p.act_half.as<__half>(), nt * w.cols, stream);
    p.act_half_holds = want;
    cuda::matmul_dequant(w.type, w.data, w.rows, w.cols, p.act_half.as<__half>(), nt, bias, y, stream);
    return;
  }
  const WeightType gemm_type = is_quantized(w.type) ? WeightType::F16 : w.type;
  cuda::matmul_float_weights(cublas, gemm_type, w.w16 ? static_cast<const void*>(w.w16) : w.data, w.rows, w.cols, x,
                             nt, p.act_half.get(), y, stream);
  p.act_half_holds = {};  // cuBLAS's launcher converted its input there (f16 or bf16)
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

// Whether a one-row matvec that quantizes its input into act_q8 (not a fused prologue) reads sw.
bool CudaBackend::Impl::swiglu_feeds_q8_1(const Graph& g, const Node& sw) const {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return n.executed() && n.op == Op::MatMul && n.rows() == 1 && n.src[0] == sw.id && !n.weight.empty() &&
           is_quantized(weights->get(n.weight).type) && !fusable_matvec(n);
  });
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
      // When the FFN down reads its input as Q8_1 (too wide for the fused prologue), the launch
      // writes that row too, and act_q8 then holds it: one quantize launch fewer.
      const bool q8_out = swiglu_feeds_q8_1(g, sw) && sw.cols() % 32 == 0;
      cuda::mmvq_swiglu_fused(input(g, norm, 0, p), norm.cols(), weights->f32(norm.weight), eps, out(p, norm.id), wg.type,
                              wg.data, wu.data, wg.rows, out(p, gate.id), out(p, up.id), out(p, sw.id), stream,
                              q8_out ? p.act_q8.get() : nullptr,
                              q8_out ? p.swiglu_q8_tickets.as<unsigned int>() : nullptr);
      if (q8_out) p.act_q8_holds = {sw.id, out(p, sw.id), 1, sw.cols()};
      break;
    }
    case cuda::FusedKind::MatvecResidual: {  // matvec (+ bias), then + residual
      const Node &mv = g.node(grp.nodes[0]), &add = g.node(grp.nodes[1]);
      cuda::FusedMatvecOut o = matvec_out(mv);
      o.residual = out(p, add.src[0] == mv.id ? add.src[1] : add.src[0]);
      o.y_plus_residual = out(p, add.id);
      const int64_t cols = weights->get(mv.weight).cols;
      if (fusable_matvec(mv))  // x quantized in the launch's prologue
        cuda::mmvq_fused(input(g, mv, 0, p), cols, nullptr, eps, nullptr, &o, 1, stream);
      else  // too wide for the prologue (residual_matvec): its Q8_1 row first
        cuda::mmvq_residual(o.type, o.w, o.n_out, cols, quantized_input(mv, input(g, mv, 0, p), cols, p), o.bias, o.y,
                            o.residual, o.y_plus_residual, stream);
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
  p.act_q8_holds = p.act_half_holds = {};  // a new step's inputs
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


}  // namespace minfer
