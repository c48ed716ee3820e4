// The streaming decode matvec (mmvq_stream.h): y = W x for up to 3 quantized matrices sharing
// one Q8_1 input row, with the matvec (bias, residual) or SwiGLU epilogue.
//
// Thread-to-data. A CTA of 256 threads = 8 warps, at most 2 CTAs per SM (all resident). The
// work is numbered in row groups: two rows of a matrix (matvec; one row, read twice, when the
// launch has fewer than 8 pairs per SM) or gate row i with up row i (SwiGLU), matrix after
// matrix. Warp w of the grid's n takes the contiguous groups [w * G / n, (w + 1) * G / n) and
// streams them chunk by chunk: a chunk is chunk_blocks(T) consecutive blocks (the row's last
// chunk may be shorter) of both rows of the group, about 1 KiB per row, copied by the warp's 32
// lanes with cp.async (16, 8 or 4 bytes each, the widest that divides the row) into its own ring
// of kStages = 3 slots in shared memory. The ring runs across groups and matrices: the warp
// issues chunk n + 2 before it consumes chunk n, so two chunks are in flight while it computes
// (~2 KiB each: 16 warps x 2 x 2 KiB = 64 KiB per SM). The first two are issued before pdl_wait
// (weights are constant during a step, pdl.cuh rule 3), so they overlap the previous kernel and
// the prologue.
// A chunk is consumed in quarters of a block (quant_blocks.cuh's codes_quarter): lane l takes
// quarter l % 4 of blocks l / 4, l / 4 + 8, ..., so the 4 lanes of a block read one contiguous
// run. Each lane's activation ints (from the Q8_1 row in shared memory) serve both rows. A row's
// sum: each lane's terms in chunk order, then warp_sum; lane 0 writes the epilogue. The order
// depends on the type and n_in only, never on the grid or the group, so mmvq, mmvq_fused and
// mmvq_swiglu_fused give one row the same bits.
// Shared memory: the Q8_1 row (copied from global, or made by the fused prologue), then 8 rings
// of kStages slots of 2 rows (each the largest chunk of the launch's types).
#include "cuda/mmvq_stream.h"

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/fused_prologue.cuh"
#include "cuda/mmvq.h"
#include "cuda/mmvq_stream_args.cuh"
#include "cuda/pdl.cuh"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {
using namespace stream_detail;

// Blocks per chunk: about 1 KiB of a row, a multiple of 16 bytes, and a multiple of 8 blocks, so
// a warp's 32 lanes cover whole blocks in each pass.
__host__ __device__ constexpr int chunk_blocks(WeightType t) {
  switch (t) {
    case WeightType::Q4_0: return 56;  // 1008 bytes
    case WeightType::Q4_1: return 48;  //  960
    case WeightType::Q5_0: return 48;  // 1056
    case WeightType::Q5_1: return 48;  // 1152
    case WeightType::Q8_0: return 32;  // 1088
    default: return 0;                 // not streamed (stream_usable)
  }
}
constexpr int kMaxChunkBytes = 1152;
// Ring slots per warp. Three measured faster than six on the 7B preset (Q4_0 decode 331 against
// 314 tok/s, docs/benchmarks.md): two chunks in flight per warp are enough at 16 warps per SM.
constexpr int kStages = 3;
// Dynamic shared memory per CTA, at most: two CTAs and their static shared memory and reserve fit
// the 228 KiB of an SM.
constexpr int kMaxSmem = static_cast<int>(kMaxStreamInput / QK * sizeof(BlockQ8_1)) + kWarps * kStages * 2 * kMaxChunkBytes;
static_assert(kMaxSmem <= 110 * 1024, "two CTAs per SM must fit");

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
template <int N>
__device__ __forceinline__ void cp_async(void* dst, const void* src) {
  if constexpr (N == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(smem_addr(dst)), "l"(src), "n"(N) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void copy_run(uint8_t* dst, const uint8_t* src, int bytes, int lane) {
  for (int i = lane * N; i < bytes; i += 32 * N) cp_async<N>(dst + i, src + i);
}

// Where a warp's issuing stands: group g (of [g, end)), chunk c of its rows, in matrix mi.
struct Cursor {
  int64_t g, end;
  int c, mi;
};

// Copies the cursor's chunk into `slot` and moves on; commits a cp.async group either way (an
// empty one past the warp's last chunk), so that group n is always chunk n.
__device__ __forceinline__ void issue(const Args& a, Cursor& cur, uint8_t* slot, int lane) {
  if (cur.g < cur.end) {
    const Mat& m = a.m[cur.mi];
    const uint8_t* rows[2];
    group_rows(m, cur.g - m.group_begin, rows);
    const int b0 = cur.c * m.chunk_blocks;
    const int blocks = min(m.chunk_blocks, m.blocks_per_row - b0);
    const int bytes = blocks * m.block_bytes;
    const int64_t off = static_cast<int64_t>(b0) * m.block_bytes;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      uint8_t* dst = slot + r * a.stage_row_bytes;
      if (m.copy_bytes == 16) copy_run<16>(dst, rows[r] + off, bytes, lane);
      else if (m.copy_bytes == 8) copy_run<8>(dst, rows[r] + off, bytes, lane);
      else copy_run<4>(dst, rows[r] + off, bytes, lane);
    }
    if (++cur.c == m.chunks_per_row) {
      cur.c = 0;
      if (++cur.g < cur.end) cur.mi = mat_of(a, cur.g);
    }
  }
  cp_async_commit();
}

// A chunk is split over the lanes in quarters of a block (quant_blocks.cuh's codes_quarter):
// sum[r] += this lane's quarters s = lane, lane + 32, ... of the chunk starting at block b0.
template <WeightType T>
__device__ __forceinline__ void consume_quarter(const uint8_t* slot, int stage_row_bytes, int b0, int s,
                                                const BlockQ8_1* xq, float (&sum)[2]) {
  static_assert(qb::Codes<T>::kParts == 1 && qb::kBlockElems<T> == QK, "32-element blocks only");
  constexpr int kBytes = qb::kBlockBytes<T>;
  const int blk = s / 4, j = s & 3;
  const qb::ActQuarter<T> act = qb::act_quarter<T>(xq + b0 + blk, j);
  sum[0] += qb::dot_quarter_q8_1<T>(slot + blk * kBytes, act, j);
  sum[1] += qb::dot_quarter_q8_1<T>(slot + stage_row_bytes + blk * kBytes, act, j);
}

// A whole chunk has a fixed quarter count, so its loop unrolls and a lane's shared-memory loads
// of several blocks are in flight together; a row's shorter last chunk takes the plain loop.
// Both add a lane's quarters in the same order.
template <WeightType T>
__device__ __forceinline__ void consume(const uint8_t* slot, int stage_row_bytes, int b0, int blocks,
                                        const BlockQ8_1* xq, int lane, float (&sum)[2]) {
  constexpr int kFull = chunk_blocks(T) * 4;
  if (blocks == chunk_blocks(T)) {
#pragma unroll
    for (int s = lane; s < kFull; s += 32) consume_quarter<T>(slot, stage_row_bytes, b0, s, xq, sum);
  } else {
    for (int s = lane; s < blocks * 4; s += 32) consume_quarter<T>(slot, stage_row_bytes, b0, s, xq, sum);
  }
}

// The type is uniform over a warp's group, so the switch never diverges within a warp.
__device__ __forceinline__ void consume_any(WeightType t, const uint8_t* slot, int stage_row_bytes, int b0, int blocks,
                                            const BlockQ8_1* xq, int lane, float (&sum)[2]) {
  switch (t) {
    case WeightType::Q4_0: return consume<WeightType::Q4_0>(slot, stage_row_bytes, b0, blocks, xq, lane, sum);
    case WeightType::Q4_1: return consume<WeightType::Q4_1>(slot, stage_row_bytes, b0, blocks, xq, lane, sum);
    case WeightType::Q5_0: return consume<WeightType::Q5_0>(slot, stage_row_bytes, b0, blocks, xq, lane, sum);
    case WeightType::Q5_1: return consume<WeightType::Q5_1>(slot, stage_row_bytes, b0, blocks, xq, lane, sum);
    case WeightType::Q8_0: return consume<WeightType::Q8_0>(slot, stage_row_bytes, b0, blocks, xq, lane, sum);
    default: return;  // stream_usable admits only the types above
  }
}

template <bool kQuantize>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) mmvq_stream_kernel(const Args a) {
  constexpr int S = kStages;
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  auto* xq = reinterpret_cast<BlockQ8_1*>(smem);
  const int stage_bytes = 2 * a.stage_row_bytes;
  uint8_t* ring = smem + a.xq_smem_bytes + warp * S * stage_bytes;
  const int64_t n_warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t wid = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  const int64_t g0 = wid * a.n_groups / n_warps, g1 = (wid + 1) * a.n_groups / n_warps;
  Cursor cur{g0, g1, 0, g0 < g1 ? mat_of(a, g0) : 0};
#pragma unroll
  for (int k = 0; k < S - 1; ++k) issue(a, cur, ring + k * stage_bytes, lane);

  if constexpr (kQuantize) prefetch_prologue_weight(a.p);
  pdl_wait();  // PDL: the copies above read weights only; x and every write come after (pdl.cuh)
  pdl_launch_dependents();
  if constexpr (kQuantize) {
    quantize_prologue(a.p, blockIdx.x == 0 ? a.p.x_hat_out : nullptr, xq);
  } else {
    const int n_ints = a.p.n_in / QK * static_cast<int>(sizeof(BlockQ8_1) / 4);
    const int* src = reinterpret_cast<const int*>(a.xq_in);
    int* dst = reinterpret_cast<int*>(smem);
    for (int i = threadIdx.x; i < n_ints; i += kThreads) dst[i] = src[i];
    __syncthreads();
  }

  int64_t n = 0;  // chunks consumed by this warp
  for (int64_t g = g0; g < g1; ++g) {
    const Mat& m = a.m[mat_of(a, g)];
    float sum[2] = {0.0f, 0.0f};
    for (int c = 0; c < m.chunks_per_row; ++c, ++n) {
      // The slot of chunk n - 1, which every lane finished with before the last __syncwarp.
      issue(a, cur, ring + ((n + S - 1) % S) * stage_bytes, lane);
      cp_async_wait<S - 1>();  // this lane's copies of chunk n have landed
      __syncwarp();                        // and every lane's
      const int b0 = c * m.chunk_blocks;
      consume_any(m.type, ring + (n % S) * stage_bytes, a.stage_row_bytes, b0,
                  min(m.chunk_blocks, m.blocks_per_row - b0), xq, lane, sum);
      __syncwarp();
    }
    sum[0] = qb::warp_sum(sum[0]);
    sum[1] = qb::warp_sum(sum[1]);
    if (lane == 0) epilogue(m, g - m.group_begin, sum);
    if (m.y_q8_1) quantize_done_blocks(m, g - m.group_begin, 1, lane);
  }
  cp_async_wait<0>();  // the trailing (empty) groups
}

template <bool kQuantize>
void launch(const Args& a, unsigned grid, cudaStream_t s, const char* kernel) {
  static const bool sized = [] {  // once per kernel, before its first launch (also inside a capture)
    CUDA_CHECK(cudaFuncSetAttribute(mmvq_stream_kernel<kQuantize>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem));
    return true;
  }();
  (void)sized;
  const size_t smem = static_cast<size_t>(a.xq_smem_bytes) + static_cast<size_t>(kWarps) * kStages * 2 * a.stage_row_bytes;
  launch_pdl(kernel, mmvq_stream_kernel<kQuantize>, grid, kThreads, smem, s, a);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int round16(int64_t v) { return static_cast<int>((v + 15) / 16 * 16); }

std::atomic<bool>& stream_flag() {
  static std::atomic<bool> on{true};
  return on;
}
std::atomic<bool>& direct_flag() {
  static std::atomic<bool> on{true};
  return on;
}

}  // namespace

bool stream_enabled() { return stream_flag().load(std::memory_order_relaxed); }
void set_stream_enabled(bool on) { stream_flag().store(on, std::memory_order_relaxed); }
bool direct_enabled() { return direct_flag().load(std::memory_order_relaxed); }
void set_direct_enabled(bool on) { direct_flag().store(on, std::memory_order_relaxed); }

bool stream_usable(WeightType t, int64_t n_in) {
  if (!stream_enabled() || n_in < kStreamMinInput || n_in > kMaxStreamInput) return false;
  // Q4_K streams through the direct kernel only (the ring has no reader for 256-element blocks).
  if (chunk_blocks(t) == 0) return t == WeightType::Q4_K && direct_enabled() && direct_usable(t, n_in);
  const int be = info(t).block_elems;
  return n_in % be == 0 && (n_in / be * info(t).block_bytes) % 4 == 0;
}

void stream_matvec(const StreamInput& in, const StreamMatrix* mats, int n_mats, cudaStream_t s) {
  constexpr const char* who = "mmvq (streaming)";
  if (n_mats < 1 || n_mats > kMaxMats) fail(who, ": ", n_mats, " matrices (1 to ", kMaxMats, ")");
  // A matrix takes the same kernel in any group, so its rows equal mmvq's of it alone bit for bit:
  // the direct kernel takes one weight type per launch, so a group that mixes kernels runs as one
  // launch per direct-kernel type plus one for the ring kernel's types (each with the prologue;
  // all write the same x_hat).
  if (n_mats > 1) {
    const auto kernel_of = [&](WeightType t) {  // the direct kernel of t, or -1: the ring kernel
      return direct_enabled() && direct_usable(t, in.n_in) ? static_cast<int>(t) : -1;
    };
    bool mixed = false;
    for (int i = 1; i < n_mats; ++i) mixed = mixed || kernel_of(mats[i].type) != kernel_of(mats[0].type);
    if (mixed) {
      bool launched[kMaxMats] = {};
      for (int i = 0; i < n_mats; ++i) {
        if (launched[i]) continue;
        StreamMatrix part[kMaxMats];
        int n_part = 0;
        for (int j = i; j < n_mats; ++j)
          if (!launched[j] && kernel_of(mats[j].type) == kernel_of(mats[i].type)) {
            part[n_part++] = mats[j];
            launched[j] = true;
          }
        stream_matvec(in, part, n_part, s);
      }
      return;
    }
  }
  Args a{};
  a.p = Prologue{in.x, in.norm_w, in.x_hat_out, static_cast<int>(in.n_in), in.eps};
  a.xq_in = static_cast<const BlockQ8_1*>(in.x_q8_1);
  int64_t stage_row = 0, pairs = 0;
  for (int i = 0; i < n_mats; ++i) pairs += mats[i].w_up ? mats[i].n_out : ceil_div(mats[i].n_out, 2);
  const int64_t sms = sm_count();
  // Few rows (Qwen2.5-0.5B's ffn_down: 896): one row per group, so that the rows spread over
  // twice the warps and SMs. A row's sum does not depend on its group, only the grid does.
  const int rows_per_group = pairs < static_cast<int64_t>(kWarps) * sms ? 1 : 2;
  for (int i = 0; i < n_mats; ++i) {
    const StreamMatrix& o = mats[i];
    if (!stream_usable(o.type, in.n_in)) fail(who, ": ", name(o.type), " rows of ", in.n_in, " elements do not stream");
    Mat& m = a.m[a.n_mats++];
    const int be = info(o.type).block_elems;
    m.w = static_cast<const uint8_t*>(o.w);
    m.w_up = static_cast<const uint8_t*>(o.w_up);
    m.n_out = o.n_out;
    m.blocks_per_row = static_cast<int>(in.n_in / be);
    m.block_bytes = static_cast<int>(info(o.type).block_bytes);
    m.row_bytes = static_cast<int64_t>(m.blocks_per_row) * m.block_bytes;
    m.chunk_blocks = chunk_blocks(o.type);  // 0 for a direct-only type (Q4_K): no ring chunks
    m.chunks_per_row = m.chunk_blocks ? static_cast<int>(ceil_div(m.blocks_per_row, m.chunk_blocks)) : 0;
    m.copy_bytes = m.row_bytes % 16 == 0 ? 16 : m.row_bytes % 8 == 0 ? 8 : 4;
    m.type = o.type;
    m.bias = o.bias;
    m.y = o.y;
    m.residual = o.residual;
    m.y_res = o.y_res;
    m.gate = o.gate;
    m.up = o.up;
    m.y_q8_1 = static_cast<BlockQ8_1*>(o.y_q8_1);
    m.q8_tickets = o.q8_tickets;
    if (o.y_q8_1 && (!o.w_up || !o.q8_tickets || o.n_out % QK != 0 || n_mats != 1))
      fail(who, ": a Q8_1 copy of y is for one SwiGLU matrix of whole 32-row blocks, with its counters");
    m.rows_per_group = o.w_up ? 1 : rows_per_group;
    m.group_begin = a.n_groups;
    a.n_groups += o.w_up ? o.n_out : ceil_div(o.n_out, m.rows_per_group);
    const int64_t chunk = static_cast<int64_t>(m.chunk_blocks < m.blocks_per_row ? m.chunk_blocks : m.blocks_per_row) *
                          m.block_bytes;
    stage_row = chunk > stage_row ? chunk : stage_row;
  }
  for (int i = a.n_mats; i < kMaxMats; ++i) a.m[i].group_begin = a.n_groups;  // never selected
  if (a.n_groups == 0) return;
  a.stage_row_bytes = round16(stage_row);
  a.xq_smem_bytes = round16(in.n_in / QK * static_cast<int64_t>(sizeof(BlockQ8_1)));
  // At least one CTA per SM while there are groups for them (a CTA's warps may then have none:
  // fewer rows per SM, but every SM's bandwidth), at most two per SM (all resident).
  const int64_t cap = kCtasPerSm * sms;
  const int64_t ctas = std::min(cap, std::min(a.n_groups, std::max(sms, ceil_div(a.n_groups, kWarps))));
  const auto grid = static_cast<unsigned>(ctas);
  bool direct = direct_enabled();
  for (int i = 0; i < n_mats; ++i) direct = direct && direct_usable(mats[i].type, in.n_in);
  if (direct) return launch_direct(a, grid, s);
  for (int i = 0; i < n_mats; ++i)
    if (chunk_blocks(mats[i].type) == 0) fail(who, ": ", name(mats[i].type), " rows stream through the direct kernel only");
  if (in.x_q8_1) launch<false>(a, grid, s, "mmvq_stream_kernel<q8_1 input>");
  else launch<true>(a, grid, s, "mmvq_stream_kernel<f32 input>");
}

}  // namespace minfer::cuda
