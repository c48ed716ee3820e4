// argmax over one row of logits (the greedy token; the trace's top-k: probes/cuda/logits_summary.cu).
//
// argmax: two stages in one launch. Stage 1: CTA b (256 threads) scans tiles b, b + grid, ... of
// kArgmaxTile = 1024 elements; in a tile thread t loads float4 t (kArgmaxVecs = 1 float4 per
// thread: coalesced, one memory round trip per tile) when the row is 16-byte aligned, else 4
// scalars t, t + 256, ...; it keeps its best (value, index): larger value, lower index on ties,
// NaN skipped. cub::BlockReduce picks the CTA's best pair (CUB's block reduction is tuned and
// correct for any pair type), which thread 0 stores as partial b in the launch's scratch slot.
// Stage 2: each CTA then takes a ticket (atomicAdd after a __threadfence); the CTA that takes the
// last one reduces the grid's partials the same way, writes the index and resets the ticket
// counter to 0 for the next launch. The order (value, then lower index) is total over non-NaN
// values, so the result does not depend on which CTA finishes last: deterministic. The grid is
// ceil(n / 1024) CTAs, capped at kArgmaxMaxCtas (1024; larger rows loop), so a 151,936-entry
// vocabulary (600 KB) is 149 CTAs of one float4 per thread, instead of one CTA of 1024 threads
// looping 37 times. Measured on the H200 (151,936 logits in L2, a captured chain of 100 dependent
// argmax launches): 10.5 us per argmax before, 4.0 us now (3.7 us with PDL); tiles of 2048 / 4096
// / 8192 elements gave 4.1 / 4.5 / 7.5 us; one thread-block cluster of 8 or 16 CTAs reducing
// through distributed shared memory (no global scratch) gave 7.2 / 5.0 us.
// Scratch: the partials and the ticket counter live in the caller's scratch (ArgmaxScratch, zeroed
// once); launches that share one must not overlap. Launches on one stream never do (each waits
// for the previous kernel, PDL included); a paired run (--compare-path) runs two backends, each
// on its own stream with its own scratch.
//
// Every kernel here is launched with PDL (pdl.cuh) and waits first.
#include "cuda/argmax.h"

#include <climits>
#include <cub/block/block_reduce.cuh>

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

// ---- argmax ----

constexpr int kArgmaxThreads = 256;
constexpr int kArgmaxVecs = 1;                                     // float4 loads per thread per tile
constexpr int64_t kArgmaxTile = 4 * kArgmaxVecs * kArgmaxThreads;  // 1024 elements
constexpr int kArgmaxMaxCtas = 1024;

struct Best {
  float v;
  int32_t i;
};

// The stage 1 partials (one per CTA) and the ticket counter of the last-CTA reduction. The
// counter is 0 between launches: the last CTA of every launch resets it.
struct ArgmaxScratch {
  float value[kArgmaxMaxCtas];
  int32_t index[kArgmaxMaxCtas];
  unsigned int ticket;
};

// The better of two pairs: larger value, lower index on equal values (-0 == +0). A NaN value never
// reaches a pair: take() skips it ('>' and '==' are false for NaN).
__device__ __forceinline__ bool better(float v, int64_t i, const Best& b) { return v > b.v || (v == b.v && i < b.i); }

struct BetterOf {
  __device__ Best operator()(const Best& a, const Best& b) const { return better(a.v, a.i, b) ? a : b; }
};

// Thread-to-data: see the file comment. The sentinel {-inf, INT_MAX} loses to every element but
// NaN (a -inf element ties on value and has the lower index); a sentinel result means all NaN.
template <bool kVec4>
__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(const float* __restrict__ x, int64_t n, int32_t* __restrict__ out_index, ArgmaxScratch* scr) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  using BlockReduce = cub::BlockReduce<Best, kArgmaxThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  __shared__ bool last;
  Best b{-INFINITY, INT_MAX};
  auto take = [&b](float v, int64_t i) {
    if (better(v, i, b)) b = Best{v, static_cast<int32_t>(i)};
  };
  const int64_t n_tiles = (n + kArgmaxTile - 1) / kArgmaxTile;
  for (int64_t tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
    const int64_t base = tile * kArgmaxTile;
    if (kVec4 && base + kArgmaxTile <= n) {
      const float4* x4 = reinterpret_cast<const float4*>(x + base);  // 16-byte aligned: base % 4 == 0
      float4 v[kArgmaxVecs];
#pragma unroll
      for (int j = 0; j < kArgmaxVecs; ++j) v[j] = x4[j * kArgmaxThreads + threadIdx.x];
#pragma unroll
      for (int j = 0; j < kArgmaxVecs; ++j) {
        const int64_t i = base + 4 * static_cast<int64_t>(j * kArgmaxThreads + threadIdx.x);
        take(v[j].x, i);
        take(v[j].y, i + 1);
        take(v[j].z, i + 2);
        take(v[j].w, i + 3);
      }
    } else {  // an unaligned row, or the row's last (partial) tile
#pragma unroll
      for (int j = 0; j < kArgmaxTile / kArgmaxThreads; ++j) {
        const int64_t i = base + j * kArgmaxThreads + threadIdx.x;
        if (i < n) take(x[i], i);
      }
    }
  }
  const Best mine = BlockReduce(tmp).Reduce(b, BetterOf{});  // thread 0 only
  if (threadIdx.x == 0) {
    scr->value[blockIdx.x] = mine.v;
    scr->index[blockIdx.x] = mine.i;
    __threadfence();  // the partial is visible device-wide before the ticket says so
    last = atomicAdd(&scr->ticket, 1u) == gridDim.x - 1;
    if (last) __threadfence();  // and every other CTA's partial is visible to the last one
  }
  __syncthreads();
  if (!last) return;
  Best p{-INFINITY, INT_MAX};
  for (unsigned c = threadIdx.x; c < gridDim.x; c += kArgmaxThreads) {
    const Best q{__ldcg(&scr->value[c]), __ldcg(&scr->index[c])};  // L2: other CTAs wrote them
    if (better(q.v, q.i, p)) p = q;
  }
  __syncthreads();  // tmp is reused
  const Best best = BlockReduce(tmp).Reduce(p, BetterOf{});
  if (threadIdx.x == 0) {
    out_index[0] = best.i == INT_MAX ? 0 : best.i;
    scr->ticket = 0;  // every CTA has taken its ticket; the next launch starts from 0
  }
}

bool aligned(const void* p, uintptr_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

}  // namespace

size_t argmax_scratch_bytes() { return sizeof(ArgmaxScratch); }

void argmax(const float* x, int64_t n, int32_t* out_index, void* scratch, cudaStream_t s) {
  if (n <= 0 || n > INT_MAX) fail("CUDA kernel argmax: n must be in [1, 2^31) (got ", n, ")");
  if (!x || !out_index || !scratch) fail("CUDA kernel argmax: null pointer");
  if (!aligned(scratch, alignof(ArgmaxScratch))) fail("CUDA kernel argmax: scratch must be ", alignof(ArgmaxScratch), "-byte aligned");
  const int64_t tiles = (n + kArgmaxTile - 1) / kArgmaxTile;
  const unsigned grid = static_cast<unsigned>(tiles < kArgmaxMaxCtas ? tiles : kArgmaxMaxCtas);
  auto* scr = static_cast<ArgmaxScratch*>(scratch);
  if (aligned(x, 16)) launch_pdl("argmax", argmax_kernel<true>, grid, kArgmaxThreads, 0, s, x, n, out_index, scr);
  else launch_pdl("argmax", argmax_kernel<false>, grid, kArgmaxThreads, 0, s, x, n, out_index, scr);
}

}  // namespace minfer::cuda
