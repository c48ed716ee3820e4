// The paired trace's local error: a node of the last step rerun on the other matmul path.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"
#include "cuda/cuda_backend_impl.h"
#include "cuda/dequant.h"
#include "cuda/elementwise.h"
#include "cuda/matmul_f16.h"
#include "cuda/mmq.h"
#include "cuda/quantize.h"

namespace minfer {

using cuda::DeviceBuffer;
using cuda::DeviceOutput;
using cuda::StepPlan;

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


}  // namespace minfer
