// What the two decode matvec kernels behind stream_matvec share (mmvq_stream.h): the launch's
// arguments (up to 3 matrices over one input row, numbered in groups of two rows), the group ->
// rows rule and the epilogues. mmvq_stream.cu holds the ring kernel (any 32-element block type,
// rows read through a cp.async ring in shared memory) and the launcher; mmvq_direct.cu the
// kernel for Q4_0, Q8_0 and Q4_K rows of whole units (loaded straight into registers). Internal to
// engine/cuda.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"
#include "cuda/fused_prologue.cuh"
#include "cuda/q8_1_device.cuh"
#include "quant/blocks.h"

namespace minfer::cuda::stream_detail {

constexpr int kThreads = kPrologueThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kCtasPerSm = 2;
constexpr int kMaxMats = 3;
constexpr int64_t kMaxStreamInput = 24576;  // its Q8_1 row: 27 KiB of shared memory

struct Mat {
  const uint8_t* w;
  const uint8_t* w_up;
  int64_t n_out, row_bytes, group_begin;
  int blocks_per_row, chunk_blocks, chunks_per_row, block_bytes, copy_bytes;
  int rows_per_group;  // matvec: 2, or 1 when the launch has too few rows to give every SM 8 pairs
  WeightType type;
  const float* bias;
  float* y;
  const float* residual;
  float* y_res;
  float* gate;
  float* up;
  BlockQ8_1* y_q8_1;          // SwiGLU: y as Q8_1 too (the FFN down's input), or nullptr
  unsigned int* q8_tickets;   // with y_q8_1: per block of 32 rows, the rows written so far
};

struct Args {
  Prologue p;              // the f32 input (quantize mode)
  const BlockQ8_1* xq_in;  // the Q8_1 input (copy mode)
  Mat m[kMaxMats];
  int n_mats;
  int64_t n_groups;
  int stage_row_bytes;  // one row's slot in a stage: 16-byte multiple
  int xq_smem_bytes;    // 16-byte multiple
};

__device__ __forceinline__ int mat_of(const Args& a, int64_t group) {
  int mi = 0;
#pragma unroll
  for (int i = 1; i < kMaxMats; ++i)
    if (i < a.n_mats && group >= a.m[i].group_begin) mi = i;
  return mi;
}

// The two weight rows of group `local` of m (a matvec group of one row, and a matvec's odd last
// group, repeat their last row: computed, not written).
__device__ __forceinline__ void group_rows(const Mat& m, int64_t local, const uint8_t* (&rows)[2]) {
  if (m.w_up) {
    rows[0] = m.w + local * m.row_bytes;
    rows[1] = m.w_up + local * m.row_bytes;
  } else {
    const int64_t r0 = m.rows_per_group * local;
    const int64_t r1 = m.rows_per_group == 2 && r0 + 1 < m.n_out ? r0 + 1 : r0;
    rows[0] = m.w + r0 * m.row_bytes;
    rows[1] = m.w + r1 * m.row_bytes;
  }
}

__device__ __forceinline__ float silu1(float v) { return v / (1.0f + expf(-v)); }  // as elementwise.cu

// The unfused kernels' epilogues: mmvq's sum + bias (or + 0.0f), the residual add, swiglu.
__device__ __forceinline__ void epilogue(const Mat& m, int64_t local, const float (&sum)[2]) {
  if (m.w_up) {
    const float g = sum[0] + 0.0f, u = sum[1] + 0.0f;
    m.gate[local] = g;
    m.up[local] = u;
    m.y[local] = silu1(g) * u;
    return;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = m.rows_per_group * local + r;
    if (r >= m.rows_per_group || row >= m.n_out) break;
    const float yv = sum[r] + (m.bias ? m.bias[row] : 0.0f);
    m.y[row] = yv;
    if (m.residual) m.y_res[row] = yv + m.residual[row];
  }
}

// After a warp wrote y of the SwiGLU rows [first, first + n) of m (n <= 32, m.y_q8_1 set): each
// block of 32 rows those complete is quantized to Q8_1 by the warp that completes it, with
// quantize_q8_1's code and lane layout (the same bits). The warps of a block count its rows on a
// ticket (threadfence reduction: each writer's y is visible before its count); the last one
// reads the block back from L2, writes it as Q8_1 and resets the ticket for the next launch.
// Called by the whole warp.
__device__ __forceinline__ void quantize_done_blocks(const Mat& m, int64_t first, int n, int lane) {
  __threadfence();  // every lane's y of these rows, before its count is seen
  __syncwarp();
  const int64_t b0 = first / QK, b1 = (first + n - 1) / QK;  // at most two blocks (n <= 32)
  for (int64_t b = b0; b <= b1; ++b) {
    const int64_t lo = b * QK > first ? b * QK : first, hi = (b + 1) * QK < first + n ? (b + 1) * QK : first + n;
    unsigned int done = 0;
    if (lane == 0) done = atomicAdd(&m.q8_tickets[b], static_cast<unsigned int>(hi - lo)) + (hi - lo) == QK;
    if (!__shfl_sync(0xffffffffu, done, 0)) continue;
    __threadfence();  // the other writers' rows, after their counts
    const int sub = lane % 8;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (lane < 8) v = __ldcg(reinterpret_cast<const float4*>(m.y + b * QK) + sub);  // L2, not a stale L1 line
    const qb::Q8_1Quad q = qb::quantize_q8_1_quad(v);
    if (lane < 8) qb::store_q8_1_quad(m.y_q8_1 + b, sub, q);
    if (lane == 0) m.q8_tickets[b] = 0;
  }
}

// The direct kernel (mmvq_direct.cu): whether it takes a launch whose every matrix is of type t
// with rows of n_in elements, and its launch (the grid as the ring kernel's; one type per launch).
bool direct_usable(WeightType t, int64_t n_in);
void launch_direct(const Args& a, unsigned grid, cudaStream_t s);

}  // namespace minfer::cuda::stream_detail
