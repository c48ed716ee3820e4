// MMQ: y[t][o] = sum_k x[t][k] W[o][k] (+ bias[o]) with W quantized and x in Q8_1 blocks, the
// integer dot products on the int8 tensor cores (mma.sync m16n8k32 / m16n8k16, s8 x s8 -> s32).
//
// Math: for one 32-element activation block b of token t and weight row o,
//     sum_{k in b} w_k a_k = d_a * sum_g d_w(g) * isum_g  +  m_w * s_a
// isum_g = integer dot of the int8 codes over the scale group g (the whole 32 elements, or each
// 16-element half for Q6_K), (d_w, m_w) the weight scale and offset (quant_blocks.cuh: Codes<T>),
// (d_a, s_a) the Q8_1 block's scale and d_a*sum(codes). One m16n8k32 mma gives isum of one
// 32-block for 16 rows x 8 tokens (Q6_K: two m16n8k16, one per 16-element half), exactly; each
// accumulator then takes that block's float update, block after block, in K order:
//     wsum = fma(d_w(0), isum_0, 0)                       [Q6_K: wsum = fma(d_w(1), isum_1, that)]
//     acc  = fma(m_w, s_a, d_a * wsum) + acc              (types with an offset: Q4_1, Q5_1, Q4_K, Q5_K)
//     acc  = fma(d_a, wsum, acc)                          (symmetric types, m_w = 0: Q4_0, Q5_0, Q8_0, Q6_K)
// The symmetric form is two FP32 instructions per accumulator and block instead of four (the
// update, not the mma, is most of the inner loop's issue slots), with one rounding fewer. Written
// with explicit-rounding intrinsics so no compiler contraction can change them; test_cuda_mmq
// checks every element bit-exactly against a host emulation of them, for every tile.
// The int -> float step is folded into the mma (see "Exact conversion" below).
//
// CTA tile: 16*A weight rows x 64 tokens (A = 8, 4, 2, 1: 128, 64, 32, 16 rows), K in steps of 256
// elements (8 Q8_1 blocks, one K-quant super-block). 12 warps (384 threads; 16, 512, for the 128-row tile), specialised:
//   * 4 loader warps (8 for 128 rows) fill the next K step's stage: the activation codes (4-byte loads, zeros
//     past nt / past the row), their (d_a, s_a), and the weights unpacked by load_weight_tile
//     (every format to int8 codes + scales, exactly as before), all by plain st.shared; for the
//     128-row tile all of a thread's global loads of a step are in flight together;
//   * 8 math warps run the tensor cores on a filled stage (math_narrow: 16 x 8A warp tiles for
//     A <= 4; math_wide: 32 x 32 warp tiles for the 128-row tile).
// Two stages in shared memory (three for the 128-row tile, which runs one CTA per SM), handed over with named barriers (kBarFull + s: stage s filled,
// kBarEmpty + s: stage s read). A CTA's K loop is a chain of dependent steps; with one stage
// every step waited for its global loads (a 64-row CTA on a 896-row matrix runs one CTA per SM
// at 512 tokens, so nothing else hid that latency); with two, the loads of step k+1 overlap
// the mma work of step k. At most 80 registers for A <= 4 (two CTAs per SM), 128 for A = 8 (one
// CTA of 3 x 66 KB stages), no spills.
//
// Stage (shared memory, per K step; kStride = 68 ints per row of the int tiles):
//   wq[16A][68]   weight codes as int8x4, element 4i..4i+3 of the step in int i;
//   xq[64][68]    activation codes, token-major (= the "col" B operand: K contiguous per token);
//   wd[16A][G+1], wm[16A][9]   per-group weight scales (G = 8, or 16 for Q6_K) and per-32-block
//                 offsets (floats; +1: 8 consecutive rows land in 8 different banks);
//   xds[64][9]    (d_a, s_a) per token and block (float2; +1: tokens 2 apart in different banks).
// Bytes per stage: 128 rows 66048 (Q6_K 70144), 64 rows 44032 (46080), 32 rows 33024 (34048),
// 16 rows 27520 (28032); the stages as dynamic shared memory (at most 92 KB per CTA for A <= 4:
// two CTAs fit on an SM; 206 KB for the 128-row tile's three).
//
// Warp tiling, A <= 4 (math_narrow): math warp w owns the m16 tile mt = w % A (rows 16mt..16mt+15
// of the CTA tile) and the A n8 tiles (w / A) * A .. + A-1 (tokens 8n..8n+7 each): a 16 x 8A warp
// tile, so the 8 warps cover 16A x 64. Per 32-block a warp loads one A fragment (4 ints) and its
// rows' scales once, and per n8 tile one B fragment (2 ints) and two tokens' (d_a, s_a).
// A = 8 (math_wide): warp w owns rows 32(w % 4).. and tokens 32(w / 4)..: 2 m16 x 4 n8 tiles,
// each A fragment serving 4 mma and each B fragment 2. On the H200 (ncu, 7B gate/up, 512 tokens)
// the 64-row tile was bound by shared memory (L1 83 % busy, ~6 loads per mma) and by the float
// updates (16 FP32 instructions per mma); the wide tile loads 3.5 per mma. An m16 tile wholly past
// n_out or an n8 tile wholly past nt is skipped (warp-uniform).
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k32" / "... m16n8k16 with integer type";
// g = lane / 4, q = lane % 4; a register holds 4 int8 of consecutive k, lowest k in the low byte,
// so in units of the staged ints (4 codes each) of one 32-block kb:
//   A (16 rows x 32 k, row-major):  a0 = W[g][q],  a1 = W[g+8][q],  a2 = W[g][q+4],  a3 = W[g+8][q+4]
//   B (32 k x 8 tokens, "col"):     b0 = X[tok g][q],  b1 = X[tok g][q+4]
//   C/D (16 x 8, s32):              c0 = (row g, tok 2q), c1 = (g, 2q+1), c2 = (g+8, 2q), c3 = (g+8, 2q+1)
// m16n8k16 (Q6_K halves): A = {a0, a1}, B = {b0} over ints 0..3 (elements 0..15 of the block), and
// A = {a2, a3}, B = {b1} over ints 4..7 (elements 16..31), C as above.
// The 128-row tile loads them with ldmatrix.x4 (one instruction per A fragment, one per two
// n8 tiles' B fragments: the 8x8 b16 matrices are 8 rows x 4 ints of these tiles).
// Bank conflicts: a fragment load reads 8 rows x 4 consecutive ints; with a row stride of 68
// (= 4 mod 32) word (row g, int q) is in bank 4g + q + const: all 32 lanes in different banks
// (and each 8-row phase of an ldmatrix covers the 32 banks once).
//
// Exact conversion: the mma accumulates onto C = 0x4B400000, the bits of the float M = 1.5 * 2^23.
// |isum| <= 32 * 128 * 128 = 2^19 < 2^22 for any int8 codes, so D = 0x4B400000 + isum has the
// same exponent and, read as a float, is exactly M + isum. Then
//     fma(d_w, D_f, -(d_w * M)) = round(d_w * isum) = fma(d_w, float(isum), 0),
// including the +0 of isum = 0 and of d_w = +-0, because d_w * M is exact: every d_w is an f16
// times an integer of at most 8 bits (at most 19 significant bits, M has 2) and far from overflow.
// Q6_K's second half needs the float itself: D_f - M = float(isum) exactly. (Non-finite scales,
// i.e. a corrupt f16, would give NaN where the dp4a kernel gave +-inf.)
//
// Q4_0 and Q8_0 (n_in a multiple of 128) run the 128-row tile as mmq_async.cu's kernel instead:
// cp.async copies of the raw blocks, no loader warps, the same bits.
// The launcher takes the 128-row tile when it launches at least one CTA per SM, else the largest
// narrow tile that still launches at least one CTA per two SMs (as the dp4a kernel did; measured
// there on the H200: at 512 tokens the 64-row tile on 112 CTAs beat the 16-row tile on 448, and
// at 16-128 tokens the 16-row tile won). A partial last K step
// (n_in = 896 = 3.5 steps) runs only its valid 32-blocks.
#include "cuda/mmq.h"

#include <bit>
#include <cstdlib>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/mmq_async.h"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {

constexpr int kTileTok = 64;              // tokens per CTA
constexpr int kTileK = 256;               // elements per K step
constexpr int kTileBlocks = kTileK / QK;  // 8 Q8_1 blocks per K step
constexpr int kTileInts = kTileK / 4;     // 64 int8x4 per row per K step
constexpr int kStride = kTileInts + 4;    // row stride of the int tiles: 4 mod 32 (fragment loads)
constexpr int kMathWarps = 8;
constexpr int kMathThreads = 32 * kMathWarps;
// Loader warps: 4 for A <= 4 (384 threads), 8 for the 128-row tile (512 threads), whose one CTA
// per SM must fill twice the weight rows per step with no second CTA's loaders beside it.
template <int A> constexpr int kLoadThreadsOf = 32 * (A == 8 ? 8 : 4);
template <int A> constexpr int kThreadsOf = kMathThreads + kLoadThreadsOf<A>;
// Shared-memory stages: two for the 16-64-row tiles (two CTAs per SM), three for the 128-row
// tile (one CTA per SM, so a deeper ring hides the loads' latency instead of a second CTA).
constexpr int kMaxStages = 3;
template <int A> constexpr int kStagesOf = A == 8 ? 3 : 2;
template <int A> constexpr int kCtasPerSm = A == 8 ? 1 : 2;
// Named barriers (0 is __syncthreads, unused here): stage s full, stage s read.
constexpr int kBarFull = 1, kBarEmpty = 1 + kMaxStages;

constexpr int kMagicBits = 0x4B400000;   // f32 bits of kMagic
constexpr float kMagic = 12582912.0f;    // 1.5 * 2^23
static_assert(std::bit_cast<float>(kMagicBits) == kMagic);
static_assert(kStride % 32 == 4, "fragment loads need a row stride of 4 mod 32 words");

// Q6_K has one scale per 16 weights; the others one per 32.
template <WeightType T> constexpr int kScaleElems = T == WeightType::Q6_K ? 16 : 32;
// Types whose blocks carry an offset (a min): w = d * q + m. The others (Q4_0, Q5_0, Q8_0, Q6_K)
// are symmetric (m = 0) and skip the offset term of the update.
template <WeightType T>
constexpr bool kHasOffset = T == WeightType::Q4_1 || T == WeightType::Q5_1 || T == WeightType::Q4_K ||
                            T == WeightType::Q5_K;

template <WeightType T, int kRows>
struct Stage {
  int wq[kRows][kStride];
  int xq[kTileTok][kStride];
  float wd[kRows][kTileK / kScaleElems<T> + 1];
  float wm[kRows][kTileBlocks + 1];
  float2 xds[kTileTok][kTileBlocks + 1];
};

// ---------------------------------------------------------------- barriers and the mma

// bar.arrive (producer) / bar.sync (consumer) on named barrier kId + stage (immediate ids, so
// ptxas reserves only the barriers used), counting all kThreads threads of the CTA: the PTX memory model makes
// an arrive synchronize with a sync on the same barrier, so the shared-memory stores before the
// arrive are visible after the sync (and reads before an arrive are done before the writes that
// follow the matching sync). Executed by whole warps; `stage` is warp-uniform.
template <int kId, int kThreads>
__device__ __forceinline__ void bar_sync(int stage) {
  if (stage == 0)
    asm volatile("bar.sync %0, %1;" ::"n"(kId), "n"(kThreads) : "memory");
  else if (stage == 1)
    asm volatile("bar.sync %0, %1;" ::"n"(kId + 1), "n"(kThreads) : "memory");
  else
    asm volatile("bar.sync %0, %1;" ::"n"(kId + 2), "n"(kThreads) : "memory");
}
template <int kId, int kThreads>
__device__ __forceinline__ void bar_arrive(int stage) {
  if (stage == 0)
    asm volatile("bar.arrive %0, %1;" ::"n"(kId), "n"(kThreads) : "memory");
  else if (stage == 1)
    asm volatile("bar.arrive %0, %1;" ::"n"(kId + 1), "n"(kThreads) : "memory");
  else
    asm volatile("bar.arrive %0, %1;" ::"n"(kId + 2), "n"(kThreads) : "memory");
}

// D = A (16x32 s8) * B (32x8 s8) + C, C = kMagicBits in every element.
__device__ __forceinline__ void mma_k32(int (&d)[4], int a0, int a1, int a2, int a3, int b0, int b1) {
  const int c = kMagicBits;
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c), "r"(c), "r"(c), "r"(c));
}
// D = A (16x16 s8) * B (16x8 s8) + C, C = kMagicBits in every element.
__device__ __forceinline__ void mma_k16(int (&d)[4], int a0, int a1, int b0) {
  const int c = kMagicBits;
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a0), "r"(a1), "r"(b0), "r"(c), "r"(c), "r"(c), "r"(c));
}

// Four 8x8 b16 matrices from shared memory (ldmatrix .x4): lanes 8m..8m+7 give the addresses
// of matrix m's eight 16-byte rows; lane l receives word l % 4 of row l / 4 of each matrix, in
// r[m]. For int8 tiles a 16-byte row is 4 ints of one row, so one instruction loads a whole
// m16n8k32 A fragment, or the B fragments of two n8 tiles. volatile: kept in order with the
// stage barriers (also asm volatile), which it must not move across.
__device__ __forceinline__ void ldmatrix_x4(int (&r)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

// One accumulator's update for one 32-block (see the header). d: the mma output (kMagicBits +
// isum), wd/wdm: the row's scale and -(scale * kMagic); wm: the row's offset (types with one).
template <bool kOffset>
__device__ __forceinline__ float update(float acc, int d, float wd, float wdm, float wm, float2 ds) {
  const float wsum = __fmaf_rn(wd, __int_as_float(d), wdm);  // = fma(wd, float(isum), 0)
  if constexpr (kOffset) return __fadd_rn(__fmaf_rn(wm, ds.y, __fmul_rn(ds.x, wsum)), acc);
  else return __fmaf_rn(ds.x, wsum, acc);
}
// Q6_K (symmetric): two 16-element groups with their own scales.
__device__ __forceinline__ float update2(float acc, int d0, int d1, float wd0, float wdm0, float wd1, float2 ds) {
  const float w0 = __fmaf_rn(wd0, __int_as_float(d0), wdm0);             // = fma(wd0, float(isum0), 0)
  const float wsum = __fmaf_rn(wd1, __fsub_rn(__int_as_float(d1), kMagic), w0);  // exact float(isum1)
  return __fmaf_rn(ds.x, wsum, acc);
}

// ---------------------------------------------------------------- loaders (kLoadThreads threads)

// N ints to shared memory, as one int4 / int2 store where N allows; dst is N-int aligned (see
// load_weight_tile).
template <int N>
__device__ __forceinline__ void store_ints(int* dst, const int* v) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i)
      reinterpret_cast<int4*>(dst)[i] = make_int4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  } else if constexpr (N == 2) {
    *reinterpret_cast<int2*>(dst) = make_int2(v[0], v[1]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = v[i];
  }
}

// Weight tile: rows row0.., elements k0..k0+255. Units of work = (row, block of the tile, part):
// 8 per row for every type (8 legacy blocks x 1 part, or 1 super-block x 8 parts), so 8*kRows
// units, 1 to 4 per loader thread; each unpacks 32 codes and writes its groups' ints and scales.
// A unit outside the matrix (row >= n_out, or past n_in in the last K step) writes zeros.
// Alignment of the vector stores: a row is 68 ints (272 bytes, a multiple of 16) and a group's
// first int is e/4 = 8*(legacy block) + 8*act_block + act_int, with act_int a multiple of the
// group's int count (legacy 0 of 8, Q4_K/Q5_K 0 or 4 of 4, Q6_K 0/2/4/6 of 2).
template <WeightType T, int kRows, int kLoadThreads>
__device__ __forceinline__ void load_weight_tile(Stage<T, kRows>& sh, const uint8_t* __restrict__ w, int64_t row0,
                                                 int64_t n_out, int64_t n_in, int64_t k0, int lt) {
  using C = qb::Codes<T>;
  constexpr int kElems = qb::kBlockElems<T>;
  constexpr int kBlocks = kTileK / kElems;  // weight blocks per row per K step
  constexpr int kUnitsPerRow = kBlocks * C::kParts;
  constexpr int kInts = 8 / C::kGroups;
  constexpr int kUnits = kRows * kUnitsPerRow / kLoadThreads;  // per loader thread
  static_assert((kRows * kUnitsPerRow) % kLoadThreads == 0);
  // Units whose global loads are in flight together: all of them for the 128-row tile (128
  // registers; one latency per stage instead of two), except Q6_K (its unpacking spills then);
  // two for the others (capped at 80 registers: more spills).
  constexpr int kBatch = (kRows == 128 && T != WeightType::Q6_K) || kUnits < 2 ? kUnits : 2;
  static_assert(kUnits % kBatch == 0);
  const int64_t blocks_per_row = n_in / kElems;
#pragma unroll 1
  for (int it0 = 0; it0 < kUnits; it0 += kBatch) {
    int q[kBatch][8];
    float2 sc[kBatch][C::kGroups];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {  // the loads of the batch, then its stores
      const int u = lt + (it0 + b) * kLoadThreads;
      const int r = u / kUnitsPerRow, bt = (u % kUnitsPerRow) / C::kParts, part = u % C::kParts;
      const int64_t row = row0 + r;
      const bool valid = row < n_out && k0 + bt * kElems < n_in;
      const uint8_t* blk = w + (row * blocks_per_row + k0 / kElems + bt) * qb::kBlockBytes<T>;
#pragma unroll
      for (int i = 0; i < 8; ++i) q[b][i] = 0;
      if (valid) C::get(blk, part, q[b]);
#pragma unroll
      for (int g = 0; g < C::kGroups; ++g) {  // only the groups that start a scale group store one
        const int e = bt * kElems + QK * C::act_block(part, g) + 4 * C::act_int(part, g);
        sc[b][g] = valid && e % kScaleElems<T> == 0 ? C::scale(blk, part, g) : make_float2(0.0f, 0.0f);
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int u = lt + (it0 + b) * kLoadThreads;
      const int r = u / kUnitsPerRow, bt = (u % kUnitsPerRow) / C::kParts, part = u % C::kParts;
#pragma unroll
      for (int g = 0; g < C::kGroups; ++g) {
        const int e = bt * kElems + QK * C::act_block(part, g) + 4 * C::act_int(part, g);  // first element in tile
        store_ints<kInts>(&sh.wq[r][e / 4], q[b] + g * kInts);
        if (e % kScaleElems<T> == 0) {  // the group that starts a scale group writes its scales
          sh.wd[r][e / kScaleElems<T>] = sc[b][g].x;
          if (e % QK == 0) sh.wm[r][e / QK] = sc[b][g].y;
        }
      }
    }
  }
}

// Activation tile: tokens tok0.., Q8_1 blocks kb0..kb0+7 (zeros past nt or past the row). The
// codes go through registers and st.shared like the weights (4-byte cp.async copies made the
// whole MMQ prefill ~20 % slower on the H200: docs/benchmarks.md).
// A block is 36 bytes, so its codes are only 4-byte aligned: 4-byte loads, all 32 of a thread
// issued before its stores (one global latency per stage; fits the 80 registers, no spills).
// Thread-to-data: 4096 ints, 32 per loader thread: thread lt always takes int i = lt % 64 of a
// token's 8 blocks (block i / 8, word i % 8), for tokens lt / 64 + 2*it; a warp covers 32
// consecutive ints of one token (conflict-free stores; 4 blocks of 36 contiguous bytes in global
// memory). 512 (d, s) pairs, 4 per thread, a token's 8 blocks on 8 consecutive threads (288
// contiguous bytes).
template <int kLoadThreads, bool kOverlap, typename Between>
__device__ __forceinline__ void load_act_tile(int (&xq)[kTileTok][kStride], float2 (&xds)[kTileTok][kTileBlocks + 1],
                                              const BlockQ8_1* __restrict__ x, int64_t tok0, int64_t nt,
                                              int64_t nb, int64_t kb0, int lt, Between&& between) {
  static_assert(kLoadThreads % kTileInts == 0 && kLoadThreads % kTileBlocks == 0);
  static_assert(sizeof(BlockQ8_1) % 4 == 0);
  constexpr int kIters = kTileTok * kTileInts / kLoadThreads, kTokStep = kLoadThreads / kTileInts;
  constexpr int kDsIters = kTileTok * kTileBlocks / kLoadThreads, kDsTokStep = kLoadThreads / kTileBlocks;
  const int i = lt % kTileInts, kb = i / 8, tk0 = lt / kTileInts;
  // Tokens of the tile that exist (0: block kb is past the row). The pointer steps from load to
  // load: recomputing the 64-bit address each time cost ~30 more instructions per load.
  const int n_tok = kb0 + kb < nb ? static_cast<int>(nt - tok0 < kTileTok ? nt - tok0 : kTileTok) : 0;
  const int64_t step = kTokStep * nb * static_cast<int64_t>(sizeof(BlockQ8_1) / 4);  // in ints
  const int* src = reinterpret_cast<const int*>(x[(tok0 + tk0) * nb + kb0 + kb].qs) + i % 8;
  int v[kIters];
#pragma unroll
  for (int it = 0; it < kIters; ++it, src += step) v[it] = tk0 + it * kTokStep < n_tok ? *src : 0;
  if constexpr (!kOverlap) {
#pragma unroll
    for (int it = 0; it < kIters; ++it) xq[tk0 + it * kTokStep][i] = v[it];
  }
  // The (d, s) pairs' loads go out with the codes' (one latency for both) where registers allow.
  const int dkb = lt % kTileBlocks, dtk0 = lt / kTileBlocks;
  const bool dkb_in_row = kb0 + dkb < nb;
  float2 ds[kDsIters];
#pragma unroll
  for (int it = 0; it < kDsIters; ++it) {
    const int64_t tok = tok0 + dtk0 + it * kDsTokStep;
    ds[it] = tok < nt && dkb_in_row ? qb::q8_1_ds(x + tok * nb + kb0 + dkb) : make_float2(0.0f, 0.0f);
  }
  if constexpr (kOverlap) {
    between();  // the weights' loads in flight beside these
#pragma unroll
    for (int it = 0; it < kIters; ++it) xq[tk0 + it * kTokStep][i] = v[it];
  }
#pragma unroll
  for (int it = 0; it < kDsIters; ++it) xds[dtk0 + it * kDsTokStep][dkb] = ds[it];
  if constexpr (!kOverlap) between();
}

// ---------------------------------------------------------------- the math warps

// Where a CTA stands, shared by the two math layouts.
struct Tile {
  int64_t row0, tok0, n_out, nt;
};

// 16-64-row tiles (A = 1, 2, 4): math warp w owns the m16 tile w % A and the A n8 tiles
// (w / A) * A .. + A-1: a 16 x 8A warp tile. Returns after writing its outputs.
template <WeightType T, int A>
__device__ __forceinline__ void math_narrow(const Stage<T, 16 * A>* stage, const Tile& ct, int64_t n_in,
                                            int64_t steps, const float* __restrict__ bias, float* __restrict__ y,
                                            int warp, int lane) {
  using St = Stage<T, 16 * A>;
  constexpr int kStages = kStagesOf<A>;
  constexpr int kSub = QK / kScaleElems<T>;  // scale groups per 32-block: 1, or 2 for Q6_K
  const int mt = warp % A, n0 = (warp / A) * A;  // m16 tile; first of the A n8 tiles
  const int g = lane / 4, q = lane % 4;
  const int r_lo = 16 * mt + g, r_hi = r_lo + 8;  // the rows of c0/c1 and c2/c3 in the tile
  const bool m_active = ct.row0 + 16 * mt < ct.n_out;
  bool n_active[A];
#pragma unroll
  for (int j = 0; j < A; ++j) n_active[j] = ct.tok0 + 8 * (n0 + j) < ct.nt;
  float acc[A][4];
#pragma unroll
  for (int j = 0; j < A; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

  for (int64_t i = 0; i < steps; ++i) {
    const int s = static_cast<int>(i % kStages);
    bar_sync<kBarFull, kThreadsOf<A>>(s);
    const St& sh = stage[s];
    const int64_t left = (n_in - i * kTileK) / QK;
    const int kb_valid = left < kTileBlocks ? static_cast<int>(left) : kTileBlocks;  // same for the whole CTA
    // One 32-block kb of the stage: A fragment and row scales once, then per n8 tile the B
    // fragment, the mma and the 4 accumulators' updates.
    const auto block = [&](int kb) {
      const int a0 = sh.wq[r_lo][8 * kb + q], a1 = sh.wq[r_hi][8 * kb + q];
      const int a2 = sh.wq[r_lo][8 * kb + q + 4], a3 = sh.wq[r_hi][8 * kb + q + 4];
      float wd_lo[kSub], wd_hi[kSub], wdm_lo[kSub], wdm_hi[kSub];
#pragma unroll
      for (int sg = 0; sg < kSub; ++sg) {
        wd_lo[sg] = sh.wd[r_lo][kSub * kb + sg];
        wd_hi[sg] = sh.wd[r_hi][kSub * kb + sg];
        wdm_lo[sg] = __fmul_rn(wd_lo[sg], -kMagic);  // exact (header)
        wdm_hi[sg] = __fmul_rn(wd_hi[sg], -kMagic);
      }
      const float wm_lo = kHasOffset<T> ? sh.wm[r_lo][kb] : 0.0f, wm_hi = kHasOffset<T> ? sh.wm[r_hi][kb] : 0.0f;
#pragma unroll
      for (int j = 0; j < A; ++j) {
        if (!n_active[j]) continue;
        const int tb = 8 * (n0 + j);  // first token of the n8 tile
        const int b0 = sh.xq[tb + g][8 * kb + q], b1 = sh.xq[tb + g][8 * kb + q + 4];
        const float2 ds0 = sh.xds[tb + 2 * q][kb], ds1 = sh.xds[tb + 2 * q + 1][kb];
        if constexpr (kSub == 1) {
          int d[4];
          mma_k32(d, a0, a1, a2, a3, b0, b1);
          acc[j][0] = update<kHasOffset<T>>(acc[j][0], d[0], wd_lo[0], wdm_lo[0], wm_lo, ds0);
          acc[j][1] = update<kHasOffset<T>>(acc[j][1], d[1], wd_lo[0], wdm_lo[0], wm_lo, ds1);
          acc[j][2] = update<kHasOffset<T>>(acc[j][2], d[2], wd_hi[0], wdm_hi[0], wm_hi, ds0);
          acc[j][3] = update<kHasOffset<T>>(acc[j][3], d[3], wd_hi[0], wdm_hi[0], wm_hi, ds1);
        } else {
          int d0[4], d1[4];
          mma_k16(d0, a0, a1, b0);  // elements 0..15 of the block: scale group 2kb
          mma_k16(d1, a2, a3, b1);  // elements 16..31: scale group 2kb+1
          acc[j][0] = update2(acc[j][0], d0[0], d1[0], wd_lo[0], wdm_lo[0], wd_lo[1], ds0);
          acc[j][1] = update2(acc[j][1], d0[1], d1[1], wd_lo[0], wdm_lo[0], wd_lo[1], ds1);
          acc[j][2] = update2(acc[j][2], d0[2], d1[2], wd_hi[0], wdm_hi[0], wd_hi[1], ds0);
          acc[j][3] = update2(acc[j][3], d0[3], d1[3], wd_hi[0], wdm_hi[0], wd_hi[1], ds1);
        }
      }
    };
    if (m_active) {
      if (kb_valid == kTileBlocks) {  // a whole step: straight-line code the compiler can pipeline
#pragma unroll
        for (int kb = 0; kb < kTileBlocks; ++kb) block(kb);
      } else {  // the partial last step (n_in = 896: 4 of 8 blocks)
#pragma unroll 1
        for (int kb = 0; kb < kb_valid; ++kb) block(kb);
      }
    }
    if (i + kStages < steps) bar_arrive<kBarEmpty, kThreadsOf<A>>(s);  // the loaders wait for it only before step i+kStages
  }

  // c0/c1: row r_lo, tokens 2q and 2q+1 of the n8 tile; c2/c3: row r_hi. Lanes of one token
  // write 8 consecutive floats.
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    const int64_t row = ct.row0 + (hi ? r_hi : r_lo);
    if (row >= ct.n_out) continue;
    const float bv = bias ? bias[row] : 0.0f;
#pragma unroll
    for (int j = 0; j < A; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t tok = ct.tok0 + 8 * (n0 + j) + 2 * q + e;
        if (tok < ct.nt) y[tok * ct.n_out + row] = __fadd_rn(acc[j][2 * hi + e], bv);
      }
    }
  }
}

// The 128-row tile (A = 8): math warp w owns rows 32(w % 4) .. +31 (two m16 tiles) and tokens
// 32(w / 4) .. +31 (four n8 tiles): a 32 x 32 warp tile, 8 mma per 32-block (16 for Q6_K) from 2
// A and 4 B fragments, so a fragment or scale loaded from shared memory serves 2-4 mma instead of
// 1-4 (the narrow tiles were bound by shared-memory wavefronts: ncu, docs/benchmarks.md).
// The same per-accumulator operations in the same order as math_narrow: bit-identical outputs.
// 32-blocks of a K step the 128-row tile's math unrolls: two where 128 registers hold them
// without spills (ptxas -v), one for Q5_0, Q8_0 and Q6_K.
template <WeightType T>
constexpr int kWideUnroll = T == WeightType::Q5_0 || T == WeightType::Q8_0 || T == WeightType::Q6_K ? 1 : 2;

template <WeightType T>
__device__ __forceinline__ void math_wide(const Stage<T, 128>* stage, const Tile& ct, int64_t n_in, int64_t steps,
                                          const float* __restrict__ bias, float* __restrict__ y, int warp,
                                          int lane) {
  using St = Stage<T, 128>;
  constexpr int kStages = kStagesOf<8>;
  constexpr int kSub = QK / kScaleElems<T>;
  const int wr = warp % 4, wn = warp / 4;
  const int g = lane / 4, q = lane % 4;
  // A warp whose rows all lie past n_out, or whose tokens all lie past nt, only keeps the
  // barriers. Otherwise it computes all of its 2 x 4 tiles: partial tiles read the zeros the
  // loaders wrote past the matrix, and their outputs are not stored. (Per-tile branches split
  // the K step into basic blocks, and the shared-memory loads of the next tile could not be
  // scheduled under the mma and updates of this one.)
  const bool active = ct.row0 + 32 * wr < ct.n_out && ct.tok0 + 32 * wn < ct.nt;
  float acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
  // ldmatrix row addresses of this lane (byte offsets in a stage; + 32 per 32-block): matrix m
  // = lane / 8, row lane % 8. A (m16 tile i): rows +8 for m = 1, 3, ints +4 for m = 2, 3 ->
  // {a0, a1, a2, a3}. B (n8 tiles 2p, 2p+1): ints +4 for m = 1, 3, tokens +8 for m = 2, 3 ->
  // {b0, b1} of tile 2p, then of 2p+1.
  const int lm = lane / 8, lr = lane % 8;
  uint32_t a_off[2], b_off[2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
    a_off[i] = static_cast<uint32_t>(offsetof(St, wq) +
                                     sizeof(int) * ((32 * wr + 16 * i + lr + 8 * (lm & 1)) * kStride + 4 * (lm >> 1)));
#pragma unroll
  for (int p = 0; p < 2; ++p)
    b_off[p] = static_cast<uint32_t>(offsetof(St, xq) +
                                     sizeof(int) * ((32 * wn + 16 * p + lr + 8 * (lm >> 1)) * kStride + 4 * (lm & 1)));
  const uint32_t stage0 = static_cast<uint32_t>(__cvta_generic_to_shared(stage));

  for (int64_t it = 0; it < steps; ++it) {
    const int s = static_cast<int>(it % kStages);
    bar_sync<kBarFull, kThreadsOf<8>>(s);
    const St& sh = stage[s];
    const uint32_t base = stage0 + static_cast<uint32_t>(s * sizeof(St));
    const int64_t left = (n_in - it * kTileK) / QK;
    const int kb_valid = left < kTileBlocks ? static_cast<int>(left) : kTileBlocks;
    const auto block = [&](int kb) {
      int a[2][4], b[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i) ldmatrix_x4(a[i], base + a_off[i] + 32 * kb);
#pragma unroll
      for (int p = 0; p < 2; ++p) ldmatrix_x4(b[p], base + b_off[p] + 32 * kb);
      float wd[2][2][kSub], wdm[2][2][kSub], wm[2][2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int r = 32 * wr + 16 * i + g + 8 * hi;
#pragma unroll
          for (int sg = 0; sg < kSub; ++sg) {
            wd[i][hi][sg] = sh.wd[r][kSub * kb + sg];
            wdm[i][hi][sg] = __fmul_rn(wd[i][hi][sg], -kMagic);  // exact (header)
          }
          wm[i][hi] = kHasOffset<T> ? sh.wm[r][kb] : 0.0f;
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int tb = 32 * wn + 8 * j;
        const int b0 = b[j / 2][2 * (j % 2)], b1 = b[j / 2][2 * (j % 2) + 1];
        const float2 ds[2] = {sh.xds[tb + 2 * q][kb], sh.xds[tb + 2 * q + 1][kb]};
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          if constexpr (kSub == 1) {
            int d[4];
            mma_k32(d, a[i][0], a[i][1], a[i][2], a[i][3], b0, b1);
#pragma unroll
            for (int c = 0; c < 4; ++c)
              acc[i][j][c] = update<kHasOffset<T>>(acc[i][j][c], d[c], wd[i][c / 2][0], wdm[i][c / 2][0],
                                                   wm[i][c / 2], ds[c % 2]);
          } else {
            int d0[4], d1[4];
            mma_k16(d0, a[i][0], a[i][1], b0);
            mma_k16(d1, a[i][2], a[i][3], b1);
#pragma unroll
            for (int c = 0; c < 4; ++c)
              acc[i][j][c] = update2(acc[i][j][c], d0[c], d1[c], wd[i][c / 2][0], wdm[i][c / 2][0],
                                     wd[i][c / 2][1], ds[c % 2]);
          }
        }
      }
    };
    if (active) {
      if (kb_valid == kTileBlocks) {
#pragma unroll (kWideUnroll<T>)
        for (int kb = 0; kb < kTileBlocks; ++kb) block(kb);
      } else {
#pragma unroll 1
        for (int kb = 0; kb < kb_valid; ++kb) block(kb);
      }
    }
    if (it + kStages < steps) bar_arrive<kBarEmpty, kThreadsOf<8>>(s);
  }

#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int64_t row = ct.row0 + 32 * wr + 16 * i + g + 8 * hi;
      if (row >= ct.n_out) continue;
      const float bv = bias ? bias[row] : 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int64_t tok = ct.tok0 + 32 * wn + 8 * j + 2 * q + e;
          if (tok < ct.nt) y[tok * ct.n_out + row] = __fadd_rn(acc[i][j][2 * hi + e], bv);
        }
    }
}

// ---------------------------------------------------------------- the kernel

// blockIdx.x = output tile (16A rows from row0), blockIdx.y = token tile (64 from tok0). Warps
// 0..7 compute (math_narrow / math_wide), warps 8.. load. K step i fills stage i % kStages.
template <WeightType T, int A>
__global__ void __launch_bounds__(kThreadsOf<A>, kCtasPerSm<A>)
    mmq_kernel(const uint8_t* __restrict__ w, int64_t n_out, int64_t n_in, const BlockQ8_1* __restrict__ x,
               int64_t nt, const float* __restrict__ bias, float* __restrict__ y) {
  constexpr int kRows = 16 * A;
  constexpr int kStages = kStagesOf<A>;
  using St = Stage<T, kRows>;
  extern __shared__ __align__(16) unsigned char mmq_smem[];
  St* stage = reinterpret_cast<St*>(mmq_smem);  // stage[0 .. kStages-1]
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const Tile ct{static_cast<int64_t>(blockIdx.x) * kRows, static_cast<int64_t>(blockIdx.y) * kTileTok, n_out, nt};
  const int64_t nb = n_in / QK;  // Q8_1 blocks per token
  const int64_t steps = (n_in + kTileK - 1) / kTileK;

  if (warp >= kMathWarps) {  // ---- loader warps: fill stage i % kStages once the math warps have read it
    const int lt = static_cast<int>(threadIdx.x) - kMathThreads;
    for (int64_t i = 0; i < steps; ++i) {
      const int s = static_cast<int>(i % kStages);
      if (i >= kStages) bar_sync<kBarEmpty, kThreadsOf<A>>(s);  // step i-kStages's math is done with stage s
      // The 128-row tile (128 registers) keeps the activation and weight loads in flight together;
      // the others (80) load the activations, then the weights.
      load_act_tile<kLoadThreadsOf<A>, A == 8>(stage[s].xq, stage[s].xds, x, ct.tok0, nt, nb, i * kTileBlocks, lt, [&] {
        load_weight_tile<T, kRows, kLoadThreadsOf<A>>(stage[s], w, ct.row0, n_out, n_in, i * kTileK, lt);
      });
      bar_arrive<kBarFull, kThreadsOf<A>>(s);
    }
    return;  // no barrier after this one counts the loader warps
  }
  if constexpr (A == 8)
    math_wide<T>(stage, ct, n_in, steps, bias, y, warp, lane);
  else
    math_narrow<T, A>(stage, ct, n_in, steps, bias, y, warp, lane);
}

template <WeightType T, int A>
void launch_mmq_tile(const void* w, int64_t n_out, int64_t n_in, const void* x, int64_t nt, const float* bias,
                     float* y, cudaStream_t s, const char* kernel, unsigned gy) {
  constexpr size_t kSmem = kStagesOf<A> * sizeof(Stage<T, 16 * A>);
  static_assert(sizeof(Stage<T, 16 * A>) % 16 == 0, "every stage must stay 16-byte aligned (int4 stores)");
  static_assert(kSmem * kCtasPerSm<A> <= 220 * 1024, "the stages of kCtasPerSm CTAs must fit an SM");
  // Above 48 KB of dynamic shared memory a kernel must opt in; and the L1/shared split should
  // leave room for kCtasPerSm CTAs (a hint). Once per instantiation (the engine drives one device).
  static const bool opted_in = [] {
    CUDA_CHECK(cudaFuncSetAttribute(mmq_kernel<T, A>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSmem)));
    CUDA_CHECK(cudaFuncSetAttribute(mmq_kernel<T, A>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    static_cast<int>(cudaSharedmemCarveoutMaxShared)));
    return true;
  }();
  (void)opted_in;
  const unsigned gx = grid_1d(n_out, 16 * A, kernel);
  mmq_kernel<T, A><<<dim3(gx, gy), kThreadsOf<A>, kSmem, s>>>(static_cast<const uint8_t*>(w), n_out, n_in,
                                                         static_cast<const BlockQ8_1*>(x), nt, bias, y);
  check_launch(kernel, s);
}

// tile_rows 0: the 128-row tile (one CTA per SM) when it fills every SM at least once, else the
// largest of 64, 32, 16 rows (two CTAs per SM) that still launches a CTA per two SMs; else that
// tile (the backend passes CudaOptions::mmq_tile: MINFER_MMQ_TILE forces every launch's tile, a
// tuning knob to measure the rule's choice against the others on a device).
template <WeightType T>
void launch_mmq(const void* w, int64_t n_out, int64_t n_in, const void* x, int64_t nt, const float* bias, float* y,
                cudaStream_t s, const char* kernel, int tile_rows) {
  const int64_t gy = (nt + kTileTok - 1) / kTileTok;
  if (gy > 65535) fail("CUDA kernel ", kernel, ": ", nt, " tokens exceed the grid (at most ", 65535 * kTileTok, ")");
  if (tile_rows == 0) {
    const int64_t want = (sm_count() + 1) / 2;
    const auto ctas = [&](int rows) { return (n_out + rows - 1) / rows * gy; };
    tile_rows = ctas(128) >= sm_count() ? 128 : ctas(64) >= want ? 64 : ctas(32) >= want ? 32 : 16;
  }
  const unsigned g = static_cast<unsigned>(gy);
  // Q4_0 and Q8_0 take the loader-free 128-row kernel where its copies apply (mmq_async.h).
  if (tile_rows == 128 && mmq_async_applies(T, n_in, w, x)) return mmq_async(T, w, n_out, n_in, x, nt, bias, y, s);
  switch (tile_rows) {
    case 128: return launch_mmq_tile<T, 8>(w, n_out, n_in, x, nt, bias, y, s, kernel, g);
    case 64: return launch_mmq_tile<T, 4>(w, n_out, n_in, x, nt, bias, y, s, kernel, g);
    case 32: return launch_mmq_tile<T, 2>(w, n_out, n_in, x, nt, bias, y, s, kernel, g);
    case 16: return launch_mmq_tile<T, 1>(w, n_out, n_in, x, nt, bias, y, s, kernel, g);
    default: fail("CUDA kernel ", kernel, ": output tile of ", tile_rows, " rows (128, 64, 32 or 16)");
  }
}

}  // namespace

bool mmq_supports(WeightType t) {
  switch (t) {
    case WeightType::Q4_0: case WeightType::Q4_1: case WeightType::Q5_0: case WeightType::Q5_1:
    case WeightType::Q8_0: case WeightType::Q4_K: case WeightType::Q5_K: case WeightType::Q6_K: return true;
    default: return false;
  }
}

void mmq(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt, const float* bias,
         float* y, cudaStream_t s) {
  mmq_with_tile(t, w, n_out, n_in, x_q8_1, nt, bias, y, 0, s);
}

void mmq_with_tile(WeightType t, const void* w, int64_t n_out, int64_t n_in, const void* x_q8_1, int64_t nt,
                   const float* bias, float* y, int tile_rows, cudaStream_t s) {
  constexpr const char* who = "mmq";
  if (!mmq_supports(t))
    fail(who, ": weight type ", name(t), " is not supported (quantized weights only; float weights use the f16 GEMM)");
  if (n_out < 0 || n_in < 0 || nt < 0) fail(who, ": negative shape ", n_out, "x", n_in, ", ", nt, " tokens");
  if (n_out == 0 || nt == 0) return;
  const int be = info(t).block_elems;
  if (n_in == 0 || n_in % be != 0)
    fail(who, ": ", name(t), " row of ", n_in, " elements is not a positive multiple of its block size ", be);
  if (!w || !x_q8_1 || !y) fail(who, ": null pointer");
  if ((reinterpret_cast<uintptr_t>(w) & 15u) != 0) fail(who, ": weight must be 16-byte aligned");
  if ((reinterpret_cast<uintptr_t>(x_q8_1) & 3u) != 0) fail(who, ": Q8_1 activations must be 4-byte aligned");
  switch (t) {
    case WeightType::Q4_0: return launch_mmq<WeightType::Q4_0>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q4_0>", tile_rows);
    case WeightType::Q4_1: return launch_mmq<WeightType::Q4_1>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q4_1>", tile_rows);
    case WeightType::Q5_0: return launch_mmq<WeightType::Q5_0>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q5_0>", tile_rows);
    case WeightType::Q5_1: return launch_mmq<WeightType::Q5_1>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q5_1>", tile_rows);
    case WeightType::Q8_0: return launch_mmq<WeightType::Q8_0>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q8_0>", tile_rows);
    case WeightType::Q4_K: return launch_mmq<WeightType::Q4_K>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q4_K>", tile_rows);
    case WeightType::Q5_K: return launch_mmq<WeightType::Q5_K>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q5_K>", tile_rows);
    case WeightType::Q6_K: return launch_mmq<WeightType::Q6_K>(w, n_out, n_in, x_q8_1, nt, bias, y, s, "mmq_kernel<Q6_K>", tile_rows);
    default: fail(who, ": unreachable type ", name(t));
  }
}

}  // namespace minfer::cuda
