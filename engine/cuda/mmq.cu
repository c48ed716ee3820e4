// MMQ: y[t][o] = sum_k x[t][k] W[o][k] (+ bias[o]) with W quantized and x in Q8_1 blocks.
//
// Math: for one 32-element activation block b of token t and weight row o,
//     sum_{k in b} w_k a_k = d_a * sum_g d_w(g) * isum_g  +  m_w * s_a
// isum_g = integer dot of the int8 codes over the scale group g (the whole 32 elements, or each
// 16-element half for Q6_K), (d_w, m_w) the weight scale and offset (quant_blocks.cuh: Codes<T>),
// (d_a, s_a) the Q8_1 block's scale and d_a*sum(codes).
//
// Tiling: a CTA computes a (16*A outputs) x 64 (tokens) tile of y, A = 4, 2 or 1 rows per
// thread. Per K step of 256 elements (8 Q8_1 blocks, one K-quant super-block) it stages in
// shared memory:
//   wq[16A rows][64 ints]  weight codes as int8x4 (unpacked once from any block format),
//   wd/wm                  per-group weight scales and per-32 offsets (floats),
//   xq[64 tokens][64 ints], xds[64 tokens][8] (d_a, s_a),
// then every thread does its A x 4 outputs with __dp4a over the staged ints. Rows of the int
// tiles are padded to 65 ints: a warp reading column k of 16 different rows hits 16 banks.
// The launcher takes the largest A that still launches at least one CTA per two SMs: the
// 896-row matrices of a short prompt would otherwise run on 14 CTAs of 132 SMs, while smaller
// tiles re-read the activation tile more often (measured on the H200: at 512 tokens the 64-row
// tile on 112 CTAs beats the 16-row tile on 448; at 16-128 tokens the 16-row tile wins).
// A partial last K step (n_in = 896 = 3.5 steps) runs only its valid 32-blocks.
#include "cuda/mmq.h"

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/quant_blocks.cuh"

namespace minfer::cuda {
namespace {

constexpr int kTileTok = 64;           // tokens per CTA
constexpr int kTileK = 256;            // elements per K step
constexpr int kTileBlocks = kTileK / QK;  // 8 Q8_1 blocks per K step
constexpr int kTileInts = kTileK / 4;  // 64 int8x4 per row per K step
constexpr int kPad = kTileInts + 1;    // padded row length of the int tiles
constexpr int kThreads = 256;          // 16 x 16 threads, A x 4 outputs each

// Q6_K has one scale per 16 weights; the others one per 32.
template <WeightType T> constexpr int kScaleElems = T == WeightType::Q6_K ? 16 : 32;

template <WeightType T, int kTileOut>
struct Tiles {
  int wq[kTileOut][kPad];
  float wd[kTileOut][kTileK / kScaleElems<T> + 1];  // +1: rows 16 apart fall in different banks
  float wm[kTileOut][kTileBlocks + 1];
  int xq[kTileTok][kPad];
  float2 xds[kTileTok][kTileBlocks];
};

// Weight tile: rows row0.., elements k0..k0+255. Units of work = (row, block of the tile, part):
// 8 per row for every type (8 legacy blocks x 1 part, or 1 super-block x 8 parts), so 8*16A
// units, two per thread at A = 4; each unpacks 32 codes and writes its groups' ints and scales.
// A unit outside the matrix (row >= n_out, or past n_in in the last K step) writes zeros.
template <WeightType T, int kTileOut>
__device__ __forceinline__ void load_weight_tile(Tiles<T, kTileOut>& sh, const uint8_t* __restrict__ w, int64_t row0,
                                                 int64_t n_out, int64_t n_in, int64_t k0) {
  using C = qb::Codes<T>;
  constexpr int kElems = qb::kBlockElems<T>;
  constexpr int kBlocks = kTileK / kElems;  // weight blocks per row per K step
  constexpr int kUnitsPerRow = kBlocks * C::kParts;
  constexpr int kInts = 8 / C::kGroups;
  const int64_t blocks_per_row = n_in / kElems;
#pragma unroll
  for (int u = threadIdx.x; u < kTileOut * kUnitsPerRow; u += kThreads) {
    const int r = u / kUnitsPerRow, bt = (u % kUnitsPerRow) / C::kParts, part = u % C::kParts;
    const int64_t row = row0 + r;
    const bool valid = row < n_out && k0 + bt * kElems < n_in;
    const uint8_t* blk = w + (row * blocks_per_row + k0 / kElems + bt) * qb::kBlockBytes<T>;
    int q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (valid) C::get(blk, part, q);
#pragma unroll
    for (int g = 0; g < C::kGroups; ++g) {
      const int e = bt * kElems + QK * C::act_block(part, g) + 4 * C::act_int(part, g);  // first element in tile
#pragma unroll
      for (int i = 0; i < kInts; ++i) sh.wq[r][e / 4 + i] = q[g * kInts + i];
      if (e % kScaleElems<T> == 0) {  // the group that starts a scale group writes its scales
        const float2 sc = valid ? C::scale(blk, part, g) : make_float2(0.0f, 0.0f);
        sh.wd[r][e / kScaleElems<T>] = sc.x;
        if (e % QK == 0) sh.wm[r][e / QK] = sc.y;
      }
    }
  }
}

// Activation tile: tokens tok0.., Q8_1 blocks kb0..kb0+7. Thread-to-data: 4096 ints, 16 per
// thread, consecutive threads on consecutive ints of a token's blocks; 512 (d, s) pairs, 2 each.
__device__ __forceinline__ void load_act_tile(int (&xq)[kTileTok][kPad], float2 (&xds)[kTileTok][kTileBlocks],
                                              const BlockQ8_1* __restrict__ x, int64_t tok0, int64_t nt,
                                              int64_t nb, int64_t kb0) {
#pragma unroll
  for (int u = threadIdx.x; u < kTileTok * kTileInts; u += kThreads) {
    const int tk = u / kTileInts, i = u % kTileInts, kb = i / 8;
    const int64_t tok = tok0 + tk;
    int v = 0;
    if (tok < nt && kb0 + kb < nb)
      v = reinterpret_cast<const int*>(x[tok * nb + kb0 + kb].qs)[i % 8];
    xq[tk][i] = v;
  }
#pragma unroll
  for (int u = threadIdx.x; u < kTileTok * kTileBlocks; u += kThreads) {
    const int tk = u / kTileBlocks, kb = u % kTileBlocks;
    const int64_t tok = tok0 + tk;
    xds[tk][kb] = tok < nt && kb0 + kb < nb ? qb::q8_1_ds(x + tok * nb + kb0 + kb) : make_float2(0.0f, 0.0f);
  }
}

// Thread-to-data: blockIdx.x = output tile (16A rows from row0), blockIdx.y = token tile (64
// from tok0); thread (tx = tid % 16, ty = tid / 16) owns outputs rows row0 + tx + 16a (a < A)
// and tokens tok0 + ty + 16b (b < 4); a half-warp writes 16 consecutive outputs of one token.
template <WeightType T, int A>
__global__ void __launch_bounds__(kThreads)
    mmq_kernel(const uint8_t* __restrict__ w, int64_t n_out, int64_t n_in, const BlockQ8_1* __restrict__ x,
               int64_t nt, const float* __restrict__ bias, float* __restrict__ y) {
  constexpr int kTileOut = 16 * A;
  __shared__ Tiles<T, kTileOut> sh;
  constexpr int kSub = QK / kScaleElems<T>;  // scale groups per 32-block: 1, or 2 for Q6_K
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTileOut;
  const int64_t tok0 = static_cast<int64_t>(blockIdx.y) * kTileTok;
  const int64_t nb = n_in / QK;  // Q8_1 blocks per token
  float acc[A][4] = {};
  for (int64_t k0 = 0; k0 < n_in; k0 += kTileK) {
    const int64_t left = (n_in - k0) / QK;
    const int kb_valid = left < kTileBlocks ? static_cast<int>(left) : kTileBlocks;  // same for the whole CTA
    load_weight_tile<T, kTileOut>(sh, w, row0, n_out, n_in, k0);
    load_act_tile(sh.xq, sh.xds, x, tok0, nt, nb, k0 / QK);
    __syncthreads();
    for (int kb = 0; kb < kb_valid; ++kb) {
      int isum[A][4][kSub] = {};
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        int wv[A], xv[4];
#pragma unroll
        for (int a = 0; a < A; ++a) wv[a] = sh.wq[tx + 16 * a][8 * kb + v];
#pragma unroll
        for (int b = 0; b < 4; ++b) xv[b] = sh.xq[ty + 16 * b][8 * kb + v];
#pragma unroll
        for (int a = 0; a < A; ++a)
#pragma unroll
          for (int b = 0; b < 4; ++b) isum[a][b][v / (8 / kSub)] = __dp4a(wv[a], xv[b], isum[a][b][v / (8 / kSub)]);
      }
#pragma unroll
      for (int a = 0; a < A; ++a) {
        float wd[kSub];
#pragma unroll
        for (int s = 0; s < kSub; ++s) wd[s] = sh.wd[tx + 16 * a][kSub * kb + s];
        const float wm = sh.wm[tx + 16 * a][kb];
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const float2 ds = sh.xds[ty + 16 * b][kb];
          float wsum = 0.0f;
#pragma unroll
          for (int s = 0; s < kSub; ++s) wsum += wd[s] * static_cast<float>(isum[a][b][s]);
          acc[a][b] += ds.x * wsum + wm * ds.y;
        }
      }
    }
    __syncthreads();  // the next K step overwrites the tiles
  }
#pragma unroll
  for (int a = 0; a < A; ++a) {
    const int64_t row = row0 + tx + 16 * a;
    if (row >= n_out) continue;
    const float bv = bias ? bias[row] : 0.0f;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int64_t tok = tok0 + ty + 16 * b;
      if (tok < nt) y[tok * n_out + row] = acc[a][b] + bv;
    }
  }
}

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return v > 0 ? v : 1;
  }();
  return n;
}

template <WeightType T, int A>
void launch_mmq_tile(const void* w, int64_t n_out, int64_t n_in, const void* x, int64_t nt, const float* bias,
                     float* y, cudaStream_t s, const char* kernel, unsigned gy) {
  const unsigned gx = grid_1d(n_out, 16 * A, kernel);
  mmq_kernel<T, A><<<dim3(gx, gy), kThreads, 0, s>>>(static_cast<const uint8_t*>(w), n_out, n_in,
                                                     static_cast<const BlockQ8_1*>(x), nt, bias, y);
  check_launch(kernel, s);
}

// tile_rows 0: the largest output tile (64, 32, 16 rows) that still launches a CTA per two SMs;
// else that tile.
template <WeightType T>
void launch_mmq(const void* w, int64_t n_out, int64_t n_in, const void* x, int64_t nt, const float* bias, float* y,
                cudaStream_t s, const char* kernel, int tile_rows) {
  const int64_t gy = (nt + kTileTok - 1) / kTileTok;
  if (gy > 65535) fail("CUDA kernel ", kernel, ": ", nt, " tokens exceed the grid (at most ", 65535 * kTileTok, ")");
  if (tile_rows == 0) {
    const int64_t want = (sm_count() + 1) / 2;
    const auto ctas = [&](int rows) { return (n_out + rows - 1) / rows * gy; };
    tile_rows = ctas(64) >= want ? 64 : ctas(32) >= want ? 32 : 16;
  }
  const unsigned g = static_cast<unsigned>(gy);
  switch (tile_rows) {
    case 64: return launch_mmq_tile<T, 4>(w, n_out, n_in, x, nt, bias, y, s, kernel, g);
    case 32: return launch_mmq_tile<T, 2>(w, n_out, n_in, x, nt, bias, y, s, kernel, g);
    case 16: return launch_mmq_tile<T, 1>(w, n_out, n_in, x, nt, bias, y, s, kernel, g);
    default: fail("CUDA kernel ", kernel, ": output tile of ", tile_rows, " rows (64, 32 or 16)");
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
