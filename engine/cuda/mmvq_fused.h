// Fused decode matrix-vector products (one token): the RMSNorm, the Q8_1 quantization of the
// activations, up to three matvecs sharing that input, and their bias / residual / SwiGLU
// epilogues in ONE launch, with every intermediate the unfused graph has still written to its own
// buffer (the normed row, each matvec output, the residual sum, gate/up and the SwiGLU product).
//
// Reference path (kept, and what the test compares against bit for bit):
//   rms_norm -> quantize_q8_1 -> mmvq (+ bias) [-> add residual]        == mmvq_fused
//   rms_norm -> quantize_q8_1 -> mmvq gate, mmvq up -> swiglu            == mmvq_swiglu_fused
// The fused kernels reuse the same device code (q8_1_device.cuh's quantizer, quant_blocks.cuh's
// dot helpers, the same per-row thread split and reduction order as mmvq, rms_norm's
// 256-thread double sum), so the outputs are bit-identical whenever the normed row is (it is: the
// sum of squares is accumulated and reduced exactly as rms_norm does).
// Test: engine/tests/test_cuda_mmvq_fused.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// One matrix of a fused group: y = W . q8_1(x_hat) (+ bias), optionally also y + residual.
struct FusedMatvecOut {
  WeightType type;    // quantized types only (mmvq_supports)
  const void* w;      // [n_out][n_in] row-major in `type`, 16-byte aligned
  int64_t n_out;
  const float* bias;  // nullable
  float* y;           // [n_out]
  const float* residual;   // nullable: then y_plus_residual = y + residual is written too
  float* y_plus_residual;  // nullable iff residual is; may alias residual (in-place residual add)
};

// Prologue shared by all matrices: x_hat = rms_norm(x, norm_w, eps) when norm_w != nullptr, else
// x_hat = x; x_hat is written to x_hat_out (by one CTA) when x_hat_out != nullptr. Each CTA
// quantizes x_hat to Q8_1 in shared memory (no separate quantize kernel).
// x, norm_w, x_hat_out: n_in f32, 16-byte aligned; n_in a multiple of every matrix's block size
// and <= 16384; x_hat_out and the outputs must not overlap x. Up to 3 matrices (n_outs 1..3) in
// ONE launch: the grid spans the rows of all of them (q/k/v share x_hat). Graph-capturable.
void mmvq_fused(const float* x, int64_t n_in, const float* norm_w, float eps, float* x_hat_out,
                const FusedMatvecOut* outs, int n_outs, cudaStream_t s);

// Gate/up/SwiGLU in one launch: gate = Wg . q(x_hat), up = Wu . q(x_hat), y = silu(gate) * up,
// all three written; same prologue as mmvq_fused. Both matrices [n_out][n_in] in `type`.
// y_q8_1 (optional; n_out a multiple of 32): y as Q8_1 too, the bytes quantize_q8_1 of y gives
// (the next matvec's input when it is too wide for the fused prologue: 7B's FFN down), written in
// the same launch where the matrices stream (a block by the warp that completes it), else by a
// quantize_q8_1 launch after it; q8_tickets: n_out / 32 counters, zero before, zero after.
void mmvq_swiglu_fused(const float* x, int64_t n_in, const float* norm_w, float eps, float* x_hat_out,
                       WeightType type, const void* w_gate, const void* w_up, int64_t n_out, float* gate_out,
                       float* up_out, float* y, cudaStream_t s, void* y_q8_1 = nullptr,
                       unsigned int* q8_tickets = nullptr);

// Largest n_in the fused launchers take (the Q8_1 row lives in shared memory). Wider inputs (the
// 7B FFN down, 18944) run quantize_q8_1 once and the matvec on its Q8_1 row: measured on the
// H200 (docs/benchmarks.md, session 18), every CTA quantizing 18944 values in its prologue made
// that matvec ~2x slower than the separate quantize launch it saves.
constexpr int64_t kFusedMaxInput = 16384;

}  // namespace minfer::cuda
