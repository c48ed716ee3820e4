// The streaming decode matvec (mmvq_stream.cu): the kernel behind mmvq, mmvq_fused and
// mmvq_swiglu_fused wherever stream_usable says so, the earlier kernels elsewhere. Internal to
// engine/cuda: callers go through mmvq.h and mmvq_fused.h, which check the arguments.
//
// Why: a decode step reads every weight once, so its speed is the rate at which the weight bytes
// arrive. The streaming kernel gives each warp whole rows and keeps up to seven chunks of them in
// flight through cp.async into shared memory (no registers held by loads in flight), so the bytes
// in flight per SM no longer depend on how much arithmetic a block of codes needs.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// Whether the decode matvecs of a `t` row of n_in elements stream: a 32-element block type
// (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), or Q4_K in whole super-blocks through the direct kernel alone
// (the other K-quants measured no faster through the ring, 7B Q4_K_M 283-286 against 287 tok/s),
// rows of at least kStreamMinInput elements (shorter rows are few bytes per
// warp: the earlier kernels split them finer) and a multiple of 4 bytes (cp.async copies 4, 8 or
// 16 bytes), the Q8_1 row within the shared memory budget, and streaming enabled (below). mmvq
// and the fused launchers decide by this one rule, so a fused output is computed in the same
// order as the unfused one (bit-identical).
bool stream_usable(WeightType t, int64_t n_in);
constexpr int64_t kStreamMinInput = 2048;

// On by default (the kernel tests and minfer-kernel-bench). CudaBackend sets it per model: off
// with MINFER_MMVQ_STREAM=0 and for models narrower than kStreamMinModelWidth (on the H200,
// Qwen2.5-0.5B, 896 wide, where only ffn_down's rows are long enough, decoded 5-8 % slower
// streamed; 7B, 3584 wide, 7 % faster: docs/benchmarks.md). Read at launch time (a CUDA graph
// keeps what it was captured with); not meant to change while another thread launches.
bool stream_enabled();
void set_stream_enabled(bool on);
constexpr int64_t kStreamMinModelWidth = 2048;

// Whether a streaming launch of Q4_0 or Q8_0 rows of whole units takes the direct kernel
// (mmvq_direct.cu) instead of the ring (Q4_K rows stream only when it is on). On by default; CudaBackend turns it off with
// MINFER_MMVQ_DIRECT=0, minfer-kernel-bench with --no-direct. Read at launch time, as above.
bool direct_enabled();
void set_direct_enabled(bool on);

// One matrix of a streaming launch. Matvec: y = W x (+ bias), and y_res = y + residual when
// residual is set. SwiGLU (w_up set): gate = W x, up = W_up x, y = silu(gate) * up.
struct StreamMatrix {
  WeightType type;
  const void* w;
  const void* w_up;  // nullptr: a matvec
  int64_t n_out;
  const float* bias;
  float* y;
  const float* residual;
  float* y_res;
  float* gate;
  float* up;
  // SwiGLU only (optional): y as Q8_1 blocks, the bytes quantize_q8_1 writes (n_out a multiple of
  // 32), with n_out / 32 counters that start at zero and are left at zero.
  void* y_q8_1;
  unsigned int* q8_tickets;
};

// The input row: either Q8_1 blocks already in global memory (x_q8_1), or f32 x with an optional
// RMSNorm, quantized by each CTA (fused_prologue.cuh; x_hat_out, when set, written by one CTA).
struct StreamInput {
  int64_t n_in;
  const void* x_q8_1;
  const float* x;
  const float* norm_w;
  float eps;
  float* x_hat_out;
};

// One launch over up to 3 matrices sharing the input (every one stream_usable). Arguments are
// the callers' to check. A launch whose matrices are all Q4_0 in whole 8-block units (n_in a
// multiple of 256), or all Q8_0 in whole 4-block units (128), runs the direct kernel
// (mmvq_direct.cu) while direct_enabled(), the others the ring kernel.
void stream_matvec(const StreamInput& in, const StreamMatrix* m, int n, cudaStream_t s);

}  // namespace minfer::cuda
