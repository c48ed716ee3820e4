// Fused decode matvecs: [RMSNorm] -> Q8_1 quantization -> up to 3 int8 matvecs -> epilogue
// (bias, residual add, or SwiGLU), one launch, every intermediate written.
//
// Math (each step the same device code, in the same order, as the unfused reference, so the
// results are bit-identical):
//   prologue, per CTA:  ss = sum x[c]^2 in double (rms_norm.cu's per-thread float4 loop and
//                       cub::BlockReduce<double, 256>), scale = f32(1 / sqrt(ss/n + eps)),
//                       x_hat[c] = x[c] * scale * w[c]  (two f32 multiplies, as rms_norm);
//                       Q8_1 of x_hat into shared memory (q8_1_device.cuh, as quantize_q8_1).
//   per output row:     mmvq's split of the row's (block, part) units over the row's 32*W
//                       threads, quant_blocks.cuh's dot_part_q8_1, warp_sum, the W warps' sums
//                       added in warp order, then y = sum + bias (or + 0.0f), y + residual.
//   SwiGLU:             gate, up as above (no bias); y = gate / (1 + expf(-gate)) * up.
//
// Which kernel: the matrices whose rows stream (stream_usable, as mmvq decides) go to
// mmvq_stream.cu's kernel in one launch; the rest (rows not a multiple of 4 bytes) to the kernels
// below, in a second launch when a group has both. Each output is then computed as mmvq would.
//
// Thread-to-data (the kernels below): a CTA of 256 threads = 8 warps. W warps per row (W = 4 when the row has >= 96
// units of 32 codes, i.e. n_in >= 3072, else 1: mmvq's choice), so a CTA works on 8/W row groups
// at a time; each row group takes R consecutive rows of one matrix (for SwiGLU: R gate rows and
// the same R up rows), so a warp has R (2R) independent weight streams in flight. A "tile" is
// (8/W)*R rows of one matrix; the matrices' tiles are numbered one after the other (a tile never
// straddles two matrices; the last tile of a matrix may be partial: its extra row groups re-read
// the last row and write nothing). CTA b takes tiles b, b + grid, ... The launcher picks the
// largest R (1, 2, 4; W = 4: 1, 2) that still gives every SM a tile, and caps the grid at 2 CTAs
// per SM (all resident, __launch_bounds__(256, 2)), so the prologue (norm + quantize of the whole
// row, from L2) is paid once per CTA, not once per 4 rows as a per-row-group grid would. Before
// the prologue each CTA issues L2 prefetches of its first tile's weight rows (a hint), so the
// weight stream's DRAM latency overlaps the prologue. Launched with PDL (pdl.cuh): the prefetch,
// which touches weights only, comes before pdl_wait(), so it also overlaps the previous kernel's
// tail; everything that reads x or writes comes after it.
// Prologue: fused_prologue.cuh. Shared memory: n_in/32 BlockQ8_1 (36 bytes each, <= 18 KiB at
// n_in 16384), dynamic; plus cub's temp storage.
#include "cuda/mmvq_fused.h"

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/pdl.cuh"
#include "cuda/mmvq.h"
#include "cuda/fused_prologue.cuh"
#include "cuda/mmvq_stream.h"
#include "cuda/quantize.h"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = kPrologueThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxOuts = 3;
constexpr int kCtasPerSm = 2;  // __launch_bounds__ minimum: every CTA of the capped grid is resident


struct Seg {  // one matrix of mmvq_fused
  const uint8_t* w;
  const float* bias;
  float* y;
  const float* residual;
  float* y_res;
  int64_t n_out;
  int64_t row_bytes;
  int64_t tile_begin;  // first tile of this matrix
  WeightType type;
};

struct FusedArgs {
  Prologue p;
  Seg seg[kMaxOuts];
  int n_segs;
  int64_t n_tiles;
};

struct SwigluArgs {
  Prologue p;
  const uint8_t* w_gate;
  const uint8_t* w_up;
  int64_t n_out, row_bytes, n_tiles;
  float* gate;
  float* up;
  float* y;
  WeightType type;
};

// A hint, no effect on results: pulls the weight bytes [p, p + bytes) toward L2 (one 128-byte line
// per thread per step), so the first tile's weights stream in while the prologue runs.
__device__ __forceinline__ void prefetch_l2(const uint8_t* p, int64_t bytes) {
  for (int64_t off = static_cast<int64_t>(threadIdx.x) * 128; off < bytes; off += kThreads * 128)
    asm volatile("prefetch.L2 [%0];" ::"l"(p + off));
}


// sum[r] += the row-group thread t's share of dot(row wr[r], xq), exactly mmvq_kernel's loop:
// units u = t, t + 32W, ... (block u / kParts, part u % kParts), one sum per row.
template <WeightType T, int W, int R>
__device__ __forceinline__ void rows_dot(const uint8_t* const (&wr)[R], int n_in, const BlockQ8_1* xq, int t,
                                         float (&sum)[R]) {
  constexpr int kParts = qb::Codes<T>::kParts;
  constexpr int kActPerBlock = qb::kBlockElems<T> / QK;
  const int units = n_in / qb::kBlockElems<T> * kParts;
  for (int u = t; u < units; u += 32 * W) {
    const int ib = u / kParts;
    const int part = u % kParts;
#pragma unroll
    for (int r = 0; r < R; ++r)
      sum[r] += qb::dot_part_q8_1<T>(wr[r] + static_cast<int64_t>(ib) * qb::kBlockBytes<T>, xq + ib * kActPerBlock,
                                     part);
  }
}

// The type is uniform over a tile (one matrix), so the switch never diverges within a warp.
template <int W, int R>
__device__ __forceinline__ void rows_dot_any(WeightType type, const uint8_t* const (&wr)[R], int n_in,
                                             const BlockQ8_1* xq, int t, float (&sum)[R]) {
  switch (type) {
    case WeightType::Q4_0: rows_dot<WeightType::Q4_0, W, R>(wr, n_in, xq, t, sum); break;
    case WeightType::Q4_1: rows_dot<WeightType::Q4_1, W, R>(wr, n_in, xq, t, sum); break;
    case WeightType::Q5_0: rows_dot<WeightType::Q5_0, W, R>(wr, n_in, xq, t, sum); break;
    case WeightType::Q5_1: rows_dot<WeightType::Q5_1, W, R>(wr, n_in, xq, t, sum); break;
    case WeightType::Q8_0: rows_dot<WeightType::Q8_0, W, R>(wr, n_in, xq, t, sum); break;
    case WeightType::Q4_K: rows_dot<WeightType::Q4_K, W, R>(wr, n_in, xq, t, sum); break;
    case WeightType::Q5_K: rows_dot<WeightType::Q5_K, W, R>(wr, n_in, xq, t, sum); break;
    case WeightType::Q6_K: rows_dot<WeightType::Q6_K, W, R>(wr, n_in, xq, t, sum); break;
    default: break;  // the launchers accept only the types above
  }
}

// Thread sums -> row sums, valid in lane 0 of each row group's first warp (warp % W == 0):
// warp_sum, then (W > 1) the W warps' sums added in warp order through shared memory, as
// mmvq's finish_row. Every thread of the CTA must call it (barriers when W > 1).
template <int W, int R>
__device__ __forceinline__ void reduce_rows(float (&sum)[R], float (&partial)[kWarps][R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) sum[r] = qb::warp_sum(sum[r]);
  if constexpr (W > 1) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) partial[warp][r] = sum[r];
    }
    __syncthreads();
    if (warp % W == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float v = 0.0f;
#pragma unroll
        for (int i = 0; i < W; ++i) v += partial[warp + i][r];
        sum[r] = v;
      }
    }
    __syncthreads();  // partial is rewritten by the next tile
  }
}

__device__ __forceinline__ float silu1(float v) { return v / (1.0f + expf(-v)); }  // as elementwise.cu

// The matrix that tile `tile` belongs to (tiles are numbered matrix after matrix).
__device__ __forceinline__ Seg segment_of(const FusedArgs& a, int64_t tile) {
  Seg sg = a.seg[0];
#pragma unroll
  for (int i = 1; i < kMaxOuts; ++i)
    if (i < a.n_segs && tile >= a.seg[i].tile_begin) sg = a.seg[i];
  return sg;
}

template <int W, int R>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) mmvq_fused_kernel(const FusedArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float partial[kWarps][R];
  BlockQ8_1* xq = reinterpret_cast<BlockQ8_1*>(smem);
  constexpr int kRowsPerTile = (kWarps / W) * R;
  {  // the first tile's weights (the grid never exceeds the tile count)
    const Seg sg = segment_of(a, blockIdx.x);
    const int64_t first = (blockIdx.x - sg.tile_begin) * kRowsPerTile;
    const int64_t rows = sg.n_out - first < kRowsPerTile ? sg.n_out - first : kRowsPerTile;
    prefetch_l2(sg.w + first * sg.row_bytes, rows * sg.row_bytes);
  }
  prefetch_prologue_weight(a.p);
  // PDL: the prefetches above touch weights only (constant during a step), so they overlap the
  // previous kernel's tail; the prologue reads x, so everything from here on waits (pdl.cuh).
  pdl_wait();
  pdl_launch_dependents();
  quantize_prologue(a.p, blockIdx.x == 0 ? a.p.x_hat_out : nullptr, xq);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int t = (warp % W) * 32 + lane;  // thread index within its row group
  for (int64_t tile = blockIdx.x; tile < a.n_tiles; tile += gridDim.x) {
    const Seg sg = segment_of(a, tile);
    const int64_t row0 = (tile - sg.tile_begin) * kRowsPerTile + static_cast<int64_t>(warp / W) * R;
    const uint8_t* wr[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t row = row0 + r < sg.n_out ? row0 + r : sg.n_out - 1;  // past the end: computed, not written
      wr[r] = sg.w + row * sg.row_bytes;
    }
    float sum[R];
#pragma unroll
    for (int r = 0; r < R; ++r) sum[r] = 0.0f;
    rows_dot_any<W, R>(sg.type, wr, a.p.n_in, xq, t, sum);
    reduce_rows<W, R>(sum, partial);
    if (warp % W == 0 && lane == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t row = row0 + r;
        if (row >= sg.n_out) break;
        const float yv = sum[r] + (sg.bias ? sg.bias[row] : 0.0f);
        sg.y[row] = yv;
        if (sg.residual) sg.y_res[row] = yv + sg.residual[row];
      }
    }
  }
}

template <int W, int R>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) mmvq_swiglu_fused_kernel(const SwigluArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float partial[kWarps][2 * R];
  BlockQ8_1* xq = reinterpret_cast<BlockQ8_1*>(smem);
  constexpr int kRowsPerTile = (kWarps / W) * R;
  {  // the first tile's gate and up rows
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerTile;
    const int64_t rows = a.n_out - first < kRowsPerTile ? a.n_out - first : kRowsPerTile;
    prefetch_l2(a.w_gate + first * a.row_bytes, rows * a.row_bytes);
    prefetch_l2(a.w_up + first * a.row_bytes, rows * a.row_bytes);
  }
  prefetch_prologue_weight(a.p);
  pdl_wait();  // PDL: after the weight prefetch, before the prologue reads x (as mmvq_fused_kernel)
  pdl_launch_dependents();
  quantize_prologue(a.p, blockIdx.x == 0 ? a.p.x_hat_out : nullptr, xq);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int t = (warp % W) * 32 + lane;
  for (int64_t tile = blockIdx.x; tile < a.n_tiles; tile += gridDim.x) {
    const int64_t row0 = tile * kRowsPerTile + static_cast<int64_t>(warp / W) * R;
    const uint8_t* wr[2 * R];  // R gate rows, then the same R up rows
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t row = row0 + r < a.n_out ? row0 + r : a.n_out - 1;
      wr[r] = a.w_gate + row * a.row_bytes;
      wr[R + r] = a.w_up + row * a.row_bytes;
    }
    float sum[2 * R];
#pragma unroll
    for (int r = 0; r < 2 * R; ++r) sum[r] = 0.0f;
    rows_dot_any<W, 2 * R>(a.type, wr, a.p.n_in, xq, t, sum);
    reduce_rows<W, 2 * R>(sum, partial);
    if (warp % W == 0 && lane == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t row = row0 + r;
        if (row >= a.n_out) break;
        const float g = sum[r] + 0.0f, u = sum[R + r] + 0.0f;  // mmvq without bias: sum + 0.0f
        a.gate[row] = g;
        a.up[row] = u;
        a.y[row] = silu1(g) * u;
      }
    }
  }
}

// ---------------------------------------------------------------- launchers

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Do the byte ranges [a, a + na) and [b, b + nb) share a byte?
bool overlaps(const void* a, int64_t na, const void* b, int64_t nb) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + static_cast<uintptr_t>(nb) && pb < pa + static_cast<uintptr_t>(na);
}

// 4 warps per row when a row has >= 96 units of 32 codes (mmvq's wide_rows); every supported
// type has n_in / 32 units per row.
bool wide_rows(int64_t n_in) { return n_in / QK >= 96; }

Prologue check_prologue(const char* who, const float* x, int64_t n_in, const float* norm_w, float eps,
                        float* x_hat_out) {
  if (n_in <= 0 || n_in % QK != 0 || n_in > kFusedMaxInput)
    fail(who, ": n_in ", n_in, " must be a positive multiple of ", QK, " and at most ", kFusedMaxInput);
  if (!x) fail(who, ": null input");
  if (!aligned16(x) || (norm_w && !aligned16(norm_w)) || (x_hat_out && !aligned16(x_hat_out)))
    fail(who, ": x, norm_w and x_hat_out must be 16-byte aligned");
  if (norm_w && !(eps >= 0.0f)) fail(who, ": eps must be >= 0 (got ", eps, ")");
  const int64_t bytes = n_in * static_cast<int64_t>(sizeof(float));
  if (x_hat_out && overlaps(x_hat_out, bytes, x, bytes)) fail(who, ": x_hat_out overlaps the input x");
  return Prologue{x, norm_w, x_hat_out, static_cast<int>(n_in), eps};
}

void check_output(const char* who, const char* what, const float* y, int64_t n, const float* x, int64_t n_in) {
  if (!y) fail(who, ": null ", what);
  if (overlaps(y, n * static_cast<int64_t>(sizeof(float)), x, n_in * static_cast<int64_t>(sizeof(float))))
    fail(who, ": ", what, " overlaps the input x (every CTA reads x)");
}

void check_weight(const char* who, WeightType t, const void* w, int64_t n_in) {
  if (!mmvq_supports(t))
    fail(who, ": weight type ", name(t), " is not supported (quantized weights only, as mmvq)");
  const int be = info(t).block_elems;
  if (n_in % be != 0)
    fail(who, ": ", name(t), " row of ", n_in, " elements is not a multiple of its block size ", be);
  if (!w) fail(who, ": null weight");
  if (!aligned16(w)) fail(who, ": weight must be 16-byte aligned");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The largest R (4, 2 for one warp per row; 2 for four) whose tile count still reaches one tile
// per SM; else 1.
template <class Tiles>
int pick_rows_per_group(bool wide, Tiles tiles) {
  const int sms = sm_count();
  for (int r = wide ? 2 : 4; r > 1; r /= 2)
    if (tiles(r) >= sms) return r;
  return 1;
}

unsigned capped_grid(int64_t n_tiles) {
  const int64_t cap = static_cast<int64_t>(kCtasPerSm) * sm_count();
  return static_cast<unsigned>(n_tiles < cap ? n_tiles : cap);
}

size_t prologue_smem(int64_t n_in) { return static_cast<size_t>(n_in / QK) * sizeof(BlockQ8_1); }

template <int W, int R>
void launch_fused(const FusedArgs& a, cudaStream_t s, const char* kernel) {
  launch_pdl(kernel, mmvq_fused_kernel<W, R>, capped_grid(a.n_tiles), kThreads, prologue_smem(a.p.n_in), s, a);
}
template <int W, int R>
void launch_swiglu(const SwigluArgs& a, cudaStream_t s, const char* kernel) {
  launch_pdl(kernel, mmvq_swiglu_fused_kernel<W, R>, capped_grid(a.n_tiles), kThreads, prologue_smem(a.p.n_in), s, a);
}

}  // namespace

void mmvq_fused(const float* x, int64_t n_in, const float* norm_w, float eps, float* x_hat_out,
                const FusedMatvecOut* outs, int n_outs, cudaStream_t s) {
  constexpr const char* who = "mmvq_fused";
  if (n_outs < 1 || n_outs > kMaxOuts) fail(who, ": ", n_outs, " matrices (1 to ", kMaxOuts, ")");
  if (!outs) fail(who, ": null matrix list");
  FusedArgs a{};
  a.p = check_prologue(who, x, n_in, norm_w, eps, x_hat_out);
  a.n_segs = 0;
  StreamMatrix streamed[kMaxOuts];  // the matrices mmvq would stream, in one streaming launch
  int n_streamed = 0;
  for (int i = 0; i < n_outs; ++i) {
    const FusedMatvecOut& o = outs[i];
    if (o.n_out < 0) fail(who, ": matrix ", i, " has ", o.n_out, " rows");
    if (o.n_out == 0) continue;
    check_weight(who, o.type, o.w, n_in);
    check_output(who, "y", o.y, o.n_out, x, n_in);
    if (!o.residual != !o.y_plus_residual) fail(who, ": matrix ", i, ": residual and y_plus_residual go together");
    if (o.y_plus_residual) check_output(who, "y_plus_residual", o.y_plus_residual, o.n_out, x, n_in);
    if (stream_usable(o.type, n_in)) {
      streamed[n_streamed++] = StreamMatrix{o.type, o.w, nullptr, o.n_out, o.bias, o.y, o.residual, o.y_plus_residual,
                                            nullptr, nullptr};
      continue;
    }
    Seg& sg = a.seg[a.n_segs++];
    sg.w = static_cast<const uint8_t*>(o.w);
    sg.bias = o.bias;
    sg.y = o.y;
    sg.residual = o.residual;
    sg.y_res = o.y_plus_residual;
    sg.n_out = o.n_out;
    sg.row_bytes = n_in / info(o.type).block_elems * info(o.type).block_bytes;
    sg.type = o.type;
  }
  if (n_streamed > 0) stream_matvec(StreamInput{n_in, nullptr, x, norm_w, eps, x_hat_out}, streamed, n_streamed, s);
  if (a.n_segs == 0) return;
  const bool wide = wide_rows(n_in);
  const int row_groups = kWarps / (wide ? 4 : 1);
  const auto tiles = [&](int r) {
    int64_t n = 0;
    for (int i = 0; i < a.n_segs; ++i) n += ceil_div(a.seg[i].n_out, row_groups * r);
    return n;
  };
  const int R = pick_rows_per_group(wide, tiles);
  a.n_tiles = 0;
  for (int i = 0; i < a.n_segs; ++i) {
    a.seg[i].tile_begin = a.n_tiles;
    a.n_tiles += ceil_div(a.seg[i].n_out, row_groups * R);
  }
  for (int i = a.n_segs; i < kMaxOuts; ++i) a.seg[i].tile_begin = a.n_tiles;  // never selected
  if (wide) {
    if (R == 2) return launch_fused<4, 2>(a, s, "mmvq_fused_kernel<W=4,R=2>");
    return launch_fused<4, 1>(a, s, "mmvq_fused_kernel<W=4,R=1>");
  }
  if (R == 4) return launch_fused<1, 4>(a, s, "mmvq_fused_kernel<W=1,R=4>");
  if (R == 2) return launch_fused<1, 2>(a, s, "mmvq_fused_kernel<W=1,R=2>");
  return launch_fused<1, 1>(a, s, "mmvq_fused_kernel<W=1,R=1>");
}

void mmvq_swiglu_fused(const float* x, int64_t n_in, const float* norm_w, float eps, float* x_hat_out,
                       WeightType type, const void* w_gate, const void* w_up, int64_t n_out, float* gate_out,
                       float* up_out, float* y, cudaStream_t s, void* y_q8_1, unsigned int* q8_tickets) {
  constexpr const char* who = "mmvq_swiglu_fused";
  SwigluArgs a{};
  a.p = check_prologue(who, x, n_in, norm_w, eps, x_hat_out);
  if (n_out < 0) fail(who, ": ", n_out, " rows");
  if (n_out == 0) return;
  check_weight(who, type, w_gate, n_in);
  check_weight(who, type, w_up, n_in);
  check_output(who, "gate_out", gate_out, n_out, x, n_in);
  check_output(who, "up_out", up_out, n_out, x, n_in);
  check_output(who, "y", y, n_out, x, n_in);
  if (y_q8_1 && (!q8_tickets || n_out % QK != 0 || reinterpret_cast<uintptr_t>(y_q8_1) % 4 != 0))
    fail(who, ": a Q8_1 copy of y needs n_out a multiple of ", QK, " (got ", n_out, "), counters and 4-byte alignment");
  if (stream_usable(type, n_in)) {
    const StreamMatrix m{type, w_gate, w_up, n_out, nullptr, y, nullptr, nullptr, gate_out, up_out, y_q8_1, q8_tickets};
    return stream_matvec(StreamInput{n_in, nullptr, x, norm_w, eps, x_hat_out}, &m, 1, s);
  }
  a.w_gate = static_cast<const uint8_t*>(w_gate);
  a.w_up = static_cast<const uint8_t*>(w_up);
  a.n_out = n_out;
  a.row_bytes = n_in / info(type).block_elems * info(type).block_bytes;
  a.gate = gate_out;
  a.up = up_out;
  a.y = y;
  a.type = type;
  const bool wide = wide_rows(n_in);
  const int row_groups = kWarps / (wide ? 4 : 1);
  const int R = pick_rows_per_group(wide, [&](int r) { return ceil_div(n_out, row_groups * r); });
  a.n_tiles = ceil_div(n_out, row_groups * R);
  if (wide && R == 2) launch_swiglu<4, 2>(a, s, "mmvq_swiglu_fused_kernel<W=4,R=2>");
  else if (wide) launch_swiglu<4, 1>(a, s, "mmvq_swiglu_fused_kernel<W=4,R=1>");
  else if (R == 4) launch_swiglu<1, 4>(a, s, "mmvq_swiglu_fused_kernel<W=1,R=4>");
  else if (R == 2) launch_swiglu<1, 2>(a, s, "mmvq_swiglu_fused_kernel<W=1,R=2>");
  else launch_swiglu<1, 1>(a, s, "mmvq_swiglu_fused_kernel<W=1,R=1>");
  // This kernel writes y only: its Q8_1 copy by the quantize kernel (the same bytes).
  if (y_q8_1) quantize_q8_1(y, 1, n_out, y_q8_1, s);
}

}  // namespace minfer::cuda
