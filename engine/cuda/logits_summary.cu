// The logits summary on the device, in four kernels over one row of n logits.
//
// Order: every logit becomes one 64-bit key whose descending order is summarize_logits' order:
// (order-preserving bits of the value, -0 taken as +0; 0 for NaN/Inf, so non-finite sort last)
// << 32 | ~index (lower index first on ties). Padding keys are 0, below every real key (a
// non-finite one still has ~index >= 2^31 in its low word).
//   tiles:   CTA b sorts tile b (2048 keys, cub::BlockRadixSort), keeps its top k keys and
//            counts its non-finite logits.
//   merge:   one CTA merges the tiles' candidates into the top k (as topk in argmax.cu), sums
//            the non-finite counts, and notes the max (the first key, when finite) and the
//            chosen token's logit.
//   sums:    CTA b sums exp(x - max) and exp(x - max) * (x - max) in double over its tile's
//            finite logits, and counts the keys above the chosen token's (its rank).
//   finish:  one CTA adds the tiles' partials in a fixed order (the result is reproducible).
// Thread-to-data in tiles/sums: 256 threads x 8 keys, element j*256 + t of the tile for thread
// t (coalesced).
#include "cuda/logits_summary.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <limits>

#include "cuda/cuda_check.h"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 8;
constexpr int kTile = kThreads * kItems;
constexpr int kMaxK = DeviceLogitsSummary::kMaxTopK;

using Key = unsigned long long;
using BlockSort = cub::BlockRadixSort<Key, kThreads, kItems>;

struct Partial {
  double z, ez;
  long long rank;
};

// What comes back to the host (plain old data: copied byte for byte).
struct Record {
  double z, ez;
  float max;            // largest finite logit (-inf when none)
  int32_t chosen;
  float chosen_logit;   // NaN when chosen is outside the row
  int32_t pad;
  long long nonfinite, rank;  // rank: -1 when chosen is outside the row
  Key top[kMaxK];
  float top_logit[kMaxK];
};

__device__ __forceinline__ Key make_key(float v, int64_t i) {
  uint32_t ord = 0;
  if (isfinite(v)) {
    const uint32_t u = __float_as_uint(v == 0.0f ? 0.0f : v);  // -0 ranks as +0
    ord = u & 0x80000000u ? ~u : u ^ 0x80000000u;
  }
  return (static_cast<Key>(ord) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(i));
}

__device__ __forceinline__ int32_t key_index(Key k) { return static_cast<int32_t>(~static_cast<uint32_t>(k)); }

__global__ void __launch_bounds__(kThreads) tiles_kernel(const float* x, int64_t n, int k, Key* cand, long long* tile_nonfinite) {
  __shared__ union {
    typename BlockSort::TempStorage sort;
    typename cub::BlockReduce<int, kThreads>::TempStorage reduce;
  } tmp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kTile;
  Key keys[kItems];
  int nonfinite = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = base + j * kThreads + threadIdx.x;
    if (i < n) {
      const float v = x[i];
      nonfinite += !isfinite(v);
      keys[j] = make_key(v, i);
    } else {
      keys[j] = 0ull;
    }
  }
  const int tile_nf = cub::BlockReduce<int, kThreads>(tmp.reduce).Sum(nonfinite);
  if (threadIdx.x == 0) tile_nonfinite[blockIdx.x] = tile_nf;
  __syncthreads();  // tmp is reused by the sort
  BlockSort(tmp.sort).SortDescending(keys);  // blocked: thread t holds ranks [8t, 8t + 8)
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int rank = threadIdx.x * kItems + j;
    if (rank < k) cand[static_cast<int64_t>(blockIdx.x) * k + rank] = keys[j];
  }
}

__global__ void __launch_bounds__(kThreads) merge_kernel(const float* x, int64_t n, int k, const Key* cand, int tiles,
                                                         const long long* tile_nonfinite, const int32_t* chosen, Record* rec) {
  __shared__ typename BlockSort::TempStorage tmp;
  __shared__ Key best[kMaxK];
  const int64_t n_cand = static_cast<int64_t>(tiles) * k;
  for (int j = threadIdx.x; j < k; j += kThreads) best[j] = 0ull;
  __syncthreads();
  for (int64_t base = 0; base < n_cand; base += kTile - k) {  // the same rounds in every thread
    Key keys[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int slot = j * kThreads + threadIdx.x;
      const int64_t c = base + slot - k;
      keys[j] = slot < k ? best[slot] : (c < n_cand ? cand[c] : 0ull);
    }
    __syncthreads();  // every read of best[] (and of tmp, last round) is done before they are rewritten
    BlockSort(tmp).SortDescending(keys);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int rank = threadIdx.x * kItems + j;
      if (rank < k) best[rank] = keys[j];
    }
    __syncthreads();
  }
  for (int j = threadIdx.x; j < k; j += kThreads) {
    rec->top[j] = best[j];
    rec->top_logit[j] = x[key_index(best[j])];
  }
  if (threadIdx.x == 0) {
    long long nf = 0;
    for (int t = 0; t < tiles; ++t) nf += tile_nonfinite[t];
    rec->nonfinite = nf;
    const float top = x[key_index(best[0])];
    rec->max = isfinite(top) ? top : -INFINITY;
    const int32_t c = *chosen;
    rec->chosen = c;
    rec->chosen_logit = c >= 0 && c < n ? x[c] : NAN;
  }
}

// The block's sums of z, ez and a count (thread 0 only): the three block reductions both
// partial kernels run, in this order.
using SumReduce = cub::BlockReduce<double, kThreads>;
using CountReduce = cub::BlockReduce<long long, kThreads>;
union SumStorage {
  typename SumReduce::TempStorage r;
  typename CountReduce::TempStorage c;
};
__device__ Partial block_sums(double z, double ez, long long count, SumStorage& tmp) {
  const double bz = SumReduce(tmp.r).Sum(z);
  __syncthreads();
  const double bez = SumReduce(tmp.r).Sum(ez);
  __syncthreads();
  const long long bcount = CountReduce(tmp.c).Sum(count);
  return Partial{bz, bez, bcount};
}

__global__ void __launch_bounds__(kThreads) sums_kernel(const float* x, int64_t n, const Record* rec, Partial* partials) {
  __shared__ SumStorage tmp;
  const double m = rec->max;
  const int32_t chosen = rec->chosen;
  const bool ranked = chosen >= 0 && chosen < n;
  const Key chosen_key = ranked ? make_key(rec->chosen_logit, chosen) : 0ull;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kTile;
  double z = 0, ez = 0;
  long long above = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = base + j * kThreads + threadIdx.x;
    if (i >= n) continue;
    const float v = x[i];
    if (isfinite(v)) {
      const double d = static_cast<double>(v) - m, e = exp(d);
      z += e;
      ez += e * d;
    }
    above += make_key(v, i) > chosen_key;
  }
  const Partial b = block_sums(z, ez, above, tmp);
  if (threadIdx.x == 0) partials[blockIdx.x] = Partial{b.z, b.ez, ranked ? b.rank : -1};
}

__global__ void __launch_bounds__(kThreads) finish_kernel(const Partial* partials, int tiles, Record* rec) {
  __shared__ SumStorage tmp;
  double z = 0, ez = 0;
  long long rank = 0;
  for (int t = threadIdx.x; t < tiles; t += kThreads) {  // the same order every run
    z += partials[t].z;
    ez += partials[t].ez;
    rank += partials[t].rank;
  }
  const Partial b = block_sums(z, ez, rank, tmp);
  if (threadIdx.x == 0) {
    rec->z = b.z;
    rec->ez = b.ez;
    rec->rank = partials[0].rank < 0 ? -1 : b.rank;
  }
}

}  // namespace

DeviceLogitsSummary::DeviceLogitsSummary(int64_t n, int k) : n_(n), k_(k) {
  if (n <= 0 || n > INT_MAX) fail("device logits summary: n must be in [1, 2^31) (got ", n, ")");
  if (k < 1 || k > kMaxTopK || k > n) fail("device logits summary: k must be in [1, min(", kMaxTopK, ", n)] (got k=", k, ", n=", n, ")");
  tiles_ = grid_1d(n, kTile, "logits summary");
  cand_.alloc(static_cast<size_t>(tiles_) * static_cast<size_t>(k) * sizeof(Key), "logits summary (candidates)");
  tile_nonfinite_.alloc(tiles_ * sizeof(long long), "logits summary (non-finite counts)");
  partials_.alloc(tiles_ * sizeof(Partial), "logits summary (partial sums)");
  record_.alloc(sizeof(Record), "logits summary (record)");
  for (int s = 0; s < 2; ++s) {
    CUDA_CHECK(cudaMallocHost(&host_[s], sizeof(Record)));
    CUDA_CHECK(cudaEventCreateWithFlags(&copied_[s], cudaEventDisableTiming));
  }
}

DeviceLogitsSummary::~DeviceLogitsSummary() {
  for (int s = 0; s < 2; ++s) {
    if (host_[s]) cudaFreeHost(host_[s]);
    if (copied_[s]) cudaEventDestroy(copied_[s]);
  }
}

void DeviceLogitsSummary::enqueue(const float* x, const int32_t* chosen, cudaStream_t s) {
  if (!x || !chosen) fail("device logits summary: null pointer");
  auto* rec = record_.as<Record>();
  tiles_kernel<<<tiles_, kThreads, 0, s>>>(x, n_, k_, cand_.as<Key>(), tile_nonfinite_.as<long long>());
  check_launch("logits_summary_tiles", s);
  merge_kernel<<<1, kThreads, 0, s>>>(x, n_, k_, cand_.as<Key>(), static_cast<int>(tiles_), tile_nonfinite_.as<long long>(), chosen, rec);
  check_launch("logits_summary_merge", s);
  sums_kernel<<<tiles_, kThreads, 0, s>>>(x, n_, rec, partials_.as<Partial>());
  check_launch("logits_summary_sums", s);
  finish_kernel<<<1, kThreads, 0, s>>>(partials_.as<Partial>(), static_cast<int>(tiles_), rec);
  check_launch("logits_summary_finish", s);
}

void DeviceLogitsSummary::copy_to_host(cudaStream_t s, int slot) {
  CUDA_CHECK(cudaMemcpyAsync(host_[slot], record_.get(), sizeof(Record), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaEventRecord(copied_[slot], s));
}

LogitsSummary DeviceLogitsSummary::read(int slot) const {
  event_sync_bounded(copied_[slot], "the step's logits summary");
  Record r;
  std::memcpy(&r, host_[slot], sizeof r);
  LogitsSummary s;
  s.n_vocab = n_;
  s.nonfinite = r.nonfinite;
  const bool any = r.nonfinite < n_;
  const double m = r.max;
  s.entropy = any ? std::max(0.0, std::log(r.z) - r.ez / r.z) : std::numeric_limits<double>::quiet_NaN();
  const auto prob = [&](float v) { return any && std::isfinite(v) ? std::exp(static_cast<double>(v) - m) / r.z : 0.0; };
  for (int j = 0; j < k_; ++j) {
    const float v = r.top_logit[j];
    s.top.push_back({static_cast<int32_t>(~static_cast<uint32_t>(r.top[j])), prob(v), v});
  }
  s.chosen = r.chosen;
  if (r.rank >= 0) {
    s.chosen_rank = r.rank;
    s.chosen_p = prob(r.chosen_logit);
  }
  return s;
}

}  // namespace minfer::cuda
