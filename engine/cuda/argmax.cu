// argmax and top-k over one row of logits.
//
// argmax: one CTA of 1024 threads; thread t scans elements t, t + 1024, ... (coalesced; float4
// when aligned) keeping its best (value, index), NaN skipped; cub::BlockReduce then picks the
// best pair (larger value, lower index on ties) with warp shuffles: CUB's block reduction is
// tuned and correct for any pair type, better than a hand-written one. One CTA streams a
// 152k-entry vocabulary (600 KB) in a few microseconds; a multi-CTA split would need scratch.
//
// top-k: every value becomes one 64-bit key, (order-preserving bits of the value) << 32 |
// ~index, so that sorting keys descending sorts values descending with lower indices first on
// ties, and the key alone carries value and index. cub::BlockRadixSort sorts a tile of 2048 keys
// in shared memory (CUB's radix sort is far better than a hand-written sorting network).
//   pass 1: CTA b sorts tile b (elements [2048 b, 2048 b + 2048), padded with key 0) and keeps
//           its top k keys in scratch.
//   pass 2: one CTA merges the ceil(n/2048) * k candidates: each round sorts the k best so far
//           plus 2048 - k new candidates and keeps the top k.
// Thread-to-data in both passes: 256 threads x 8 keys; the load is striped (key j of thread t is
// tile element j * 256 + t, coalesced), the sort leaves thread t with ranks [8t, 8t + 8).
#include "cuda/argmax.h"

#include <climits>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>

#include "cuda/cuda_check.h"

namespace minfer::cuda {
namespace {

// ---- argmax ----

constexpr int kArgmaxThreads = 1024;

struct Best {
  float v;
  int32_t i;
};

struct BetterOf {
  __device__ Best operator()(const Best& a, const Best& b) const {
    return (a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b;
  }
};

// Thread-to-data: see the file comment. Each thread walks increasing indices, so a strict '>'
// keeps its lowest index among equal values.
__global__ void __launch_bounds__(kArgmaxThreads) argmax_kernel(const float* x, int64_t n, int32_t* out_index, bool vec4) {
  using BlockReduce = cub::BlockReduce<Best, kArgmaxThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  Best b{-INFINITY, INT_MAX};
  auto take = [&b](float v, int64_t i) {
    if (v > b.v || (v == b.v && i < b.i)) b = Best{v, static_cast<int32_t>(i)};  // NaN compares false
  };
  int64_t done = 0;
  if (vec4) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const int64_t n4 = n / 4;
    for (int64_t i = threadIdx.x; i < n4; i += kArgmaxThreads) {
      const float4 v = x4[i];
      take(v.x, 4 * i);
      take(v.y, 4 * i + 1);
      take(v.z, 4 * i + 2);
      take(v.w, 4 * i + 3);
    }
    done = n4 * 4;
  }
  for (int64_t i = done + threadIdx.x; i < n; i += kArgmaxThreads) take(x[i], i);
  const Best best = BlockReduce(tmp).Reduce(b, BetterOf{});  // thread 0 only
  if (threadIdx.x == 0) out_index[0] = best.i == INT_MAX ? 0 : best.i;
}

// ---- top-k ----

constexpr int kSortThreads = 256;
constexpr int kSortItems = 8;
constexpr int kTile = kSortThreads * kSortItems;  // 2048 keys per sort
constexpr int kMaxK = 64;

using BlockSort = cub::BlockRadixSort<unsigned long long, kSortThreads, kSortItems>;

// Order-preserving map of a float's bits (negative: flip all; positive: flip the sign); NaN -> 0,
// below -inf (0x007fffff). The high word of a real element's key is therefore never 0: key 0 is
// padding and never reaches the output when k <= n.
__device__ __forceinline__ unsigned long long make_key(float v, int64_t i) {
  const uint32_t u = __float_as_uint(v);
  const uint32_t ord = v != v ? 0u : (u & 0x80000000u ? ~u : u ^ 0x80000000u);
  return (static_cast<unsigned long long>(ord) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(i));
}

__device__ __forceinline__ void split_key(unsigned long long key, float* value, int32_t* index) {
  const uint32_t ord = static_cast<uint32_t>(key >> 32);
  *value = ord == 0 ? __uint_as_float(0x7fc00000u) : __uint_as_float(ord & 0x80000000u ? ord ^ 0x80000000u : ~ord);
  *index = static_cast<int32_t>(~static_cast<uint32_t>(key));
}

// Pass 1. Thread-to-data: CTA b owns tile b; see the file comment.
__global__ void __launch_bounds__(kSortThreads) topk_tiles_kernel(const float* x, int64_t n, int k, unsigned long long* cand) {
  __shared__ typename BlockSort::TempStorage tmp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kTile;
  unsigned long long keys[kSortItems];
#pragma unroll
  for (int j = 0; j < kSortItems; ++j) {
    const int64_t i = base + j * kSortThreads + threadIdx.x;
    keys[j] = i < n ? make_key(x[i], i) : 0ull;
  }
  BlockSort(tmp).SortDescending(keys);  // blocked result: thread t holds ranks [8t, 8t + 8)
#pragma unroll
  for (int j = 0; j < kSortItems; ++j) {
    const int rank = threadIdx.x * kSortItems + j;
    if (rank < k) cand[static_cast<int64_t>(blockIdx.x) * k + rank] = keys[j];
  }
}

// Pass 2. Thread-to-data: one CTA; tile slots [0, k) hold the best keys so far, slots [k, 2048)
// the next candidates (striped load as in pass 1).
__global__ void __launch_bounds__(kSortThreads)
    topk_merge_kernel(const unsigned long long* cand, int64_t n_cand, int k, float* out_values, int32_t* out_indices) {
  __shared__ typename BlockSort::TempStorage tmp;
  __shared__ unsigned long long best[kMaxK];
  for (int j = threadIdx.x; j < k; j += kSortThreads) best[j] = 0ull;
  __syncthreads();
  for (int64_t base = 0; base < n_cand; base += kTile - k) {  // the same rounds in every thread
    unsigned long long keys[kSortItems];
#pragma unroll
    for (int j = 0; j < kSortItems; ++j) {
      const int slot = j * kSortThreads + threadIdx.x;
      const int64_t c = base + slot - k;
      keys[j] = slot < k ? best[slot] : (c < n_cand ? cand[c] : 0ull);
    }
    __syncthreads();  // every read of best[] (and of tmp, last round) is done before they are rewritten
    BlockSort(tmp).SortDescending(keys);
#pragma unroll
    for (int j = 0; j < kSortItems; ++j) {
      const int rank = threadIdx.x * kSortItems + j;
      if (rank < k) best[rank] = keys[j];
    }
    __syncthreads();  // best[] complete for the next round and for the output
  }
  for (int j = threadIdx.x; j < k; j += kSortThreads) split_key(best[j], &out_values[j], &out_indices[j]);
}

bool aligned(const void* p, uintptr_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

int64_t topk_tiles(int64_t n) { return (n + kTile - 1) / kTile; }

}  // namespace

void argmax(const float* x, int64_t n, int32_t* out_index, cudaStream_t s) {
  if (n <= 0 || n > INT_MAX) fail("CUDA kernel argmax: n must be in [1, 2^31) (got ", n, ")");
  if (!x || !out_index) fail("CUDA kernel argmax: null pointer");
  argmax_kernel<<<1, kArgmaxThreads, 0, s>>>(x, n, out_index, aligned(x, 16));
  check_launch("argmax", s);
}

int64_t topk_scratch_floats(int64_t n, int k) {
  if (n <= 0 || k <= 0) fail("topk_scratch_floats: bad n=", n, " k=", k);
  return topk_tiles(n) * k * static_cast<int64_t>(sizeof(unsigned long long) / sizeof(float));
}

void topk(const float* x, int64_t n, int k, float* out_values, int32_t* out_indices, float* scratch, cudaStream_t s) {
  if (n <= 0 || n > INT_MAX) fail("CUDA kernel topk: n must be in [1, 2^31) (got ", n, ")");
  if (k < 1 || k > kMaxK || k > n) fail("CUDA kernel topk: k must be in [1, min(", kMaxK, ", n)] (got k=", k, ", n=", n, ")");
  if (!x || !out_values || !out_indices || !scratch) fail("CUDA kernel topk: null pointer");
  if (!aligned(scratch, 8)) fail("CUDA kernel topk: scratch must be 8-byte aligned");
  auto* cand = reinterpret_cast<unsigned long long*>(scratch);
  const unsigned tiles = grid_1d(n, kTile, "topk");
  topk_tiles_kernel<<<tiles, kSortThreads, 0, s>>>(x, n, k, cand);
  check_launch("topk_tiles", s);
  topk_merge_kernel<<<1, kSortThreads, 0, s>>>(cand, static_cast<int64_t>(tiles) * k, k, out_values, out_indices);
  check_launch("topk_merge", s);
}

}  // namespace minfer::cuda
