// The logits summary on the device, in two kernels over one row of n logits.
//
// Order: every logit becomes one 64-bit key whose descending order is summarize_logits' order:
// (order-preserving bits of the value, -0 taken as +0; 0 for NaN/Inf, so non-finite rank last)
// << 32 | ~index (lower index first on ties). Keys are unique (the index is in them), so "the
// r-th largest key" is always well defined and selection needs no tie rule of its own.
//   tiles:  CTA b owns tile b (2048 logits; 256 threads x 8, element j*256 + t of the tile for
//           thread t: coalesced). It counts the tile's non-finite logits and the keys above the
//           chosen token's (every CTA reads x[chosen] itself), finds the tile's largest finite
//           logit m_b, sums exp(x - m_b) and exp(x - m_b) * (x - m_b) in double over its finite
//           logits, and writes its top k keys in descending order (select, below).
//   finish: one CTA selects the top k of all tiles' candidates the same way (in chunks of 2048
//           keys, the running top k taken into the next chunk), rescales the tiles' sums to the
//           global max M = max m_b (z = sum z_b exp(m_b - M), ez = sum exp(m_b - M) (ez_b +
//           (m_b - M) z_b); tiles without a finite logit are skipped) in a fixed order, so the
//           result is reproducible run to run, and writes the record.
// Select (top k of a CTA's 2048 keys, no sort of them): each thread sorts its own 8 keys in
// registers (a fixed network); each warp then runs k rounds of a warp-wide max over its lanes'
// largest remaining keys (two redux.sync: value word, then the index word among the lanes that
// tie on it), the winning lane dropping that key, which gives the warp's top k in order without
// any block barrier; last, a key of warp w's list at position p has block rank p + (keys above
// it in the other lists, by binary search), and the keys of rank < k are written at their
// rank. A radix sort of the whole tile costs far more and orders keys nobody reads.
// Both kernels are launched with PDL (pdl.cuh) and wait first.
#include "probes/cuda/logits_summary.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <cub/block/block_reduce.cuh>
#include <limits>

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 8;
constexpr int kTile = kThreads * kItems;
constexpr int kMaxK = DeviceLogitsSummary::kMaxTopK;
static_assert(kMaxK <= kThreads && kMaxK <= kTile / 2, "finish: one top entry per thread; a chunk adds kTile - k candidates");

using Key = unsigned long long;

// Sums over finite logits relative to a max (z, ez), and two counts.
struct Sums {
  double z, ez;
  int nonfinite, above;  // above: keys above the chosen token's
};

struct AddSums {
  __device__ Sums operator()(const Sums& a, const Sums& b) const {
    return {a.z + b.z, a.ez + b.ez, a.nonfinite + b.nonfinite, a.above + b.above};
  }
};
using SumReduce = cub::BlockReduce<Sums, kThreads>;

// A tile's results: its sums relative to its largest finite logit, kept as an order word
// (0: the tile has no finite logit).
struct TilePartial {
  Sums sums;
  uint32_t max_ord;
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

// The order word of a value: unsigned order = float order, -0 as +0, 0 for NaN/Inf (below
// every finite value, whose word is at least that of -FLT_MAX, 0x00800000).
__device__ __forceinline__ uint32_t order_word(float v) {
  if (!isfinite(v)) return 0;
  const uint32_t u = __float_as_uint(v == 0.0f ? 0.0f : v);
  return u & 0x80000000u ? ~u : u ^ 0x80000000u;
}

__device__ __forceinline__ float word_value(uint32_t ord) {  // inverse of order_word, finite values
  return __uint_as_float(ord & 0x80000000u ? ord ^ 0x80000000u : ~ord);
}

// Also the key of a padding slot i >= n (value NaN): it ranks after every real key, and stays
// unique and non-zero (i < 2^31 + kTile).
__device__ __forceinline__ Key make_key(float v, int64_t i) {
  return (static_cast<Key>(order_word(v)) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(i));
}

__device__ __forceinline__ int32_t key_index(Key k) { return static_cast<int32_t>(~static_cast<uint32_t>(k)); }

// Sorts a thread's keys descending: odd-even transposition, every index a compile-time constant
// after unrolling, so the keys stay in registers.
__device__ __forceinline__ void sort_desc(Key (&a)[kItems]) {
#pragma unroll
  for (int round = 0; round < kItems; ++round)
#pragma unroll
    for (int j = round & 1; j + 1 < kItems; j += 2) {
      const Key hi = a[j] > a[j + 1] ? a[j] : a[j + 1], lo = a[j] > a[j + 1] ? a[j + 1] : a[j];
      a[j] = hi;
      a[j + 1] = lo;
    }
}

// The warp's largest key, in every lane: the largest value word, then the largest index word
// among the lanes holding that value word (redux.sync works on 32 bits).
__device__ __forceinline__ Key warp_max(Key v) {
  const uint32_t hi = static_cast<uint32_t>(v >> 32), top_hi = __reduce_max_sync(0xffffffffu, hi);
  const uint32_t lo = __reduce_max_sync(0xffffffffu, hi == top_hi ? static_cast<uint32_t>(v) : 0u);
  return (static_cast<Key>(top_hi) << 32) | lo;
}

// The warp's top k keys, descending, into list[0..k) (written by lane 0). keys: the lane's own,
// sorted descending; consumed. Each round the lane whose largest remaining key won shifts it
// out (a select per register, no divergence). A zero key (kernel 2's empty slots) may be taken
// by several lanes at once: harmless, select_top_k never writes a zero key.
__device__ void warp_top_k(Key (&keys)[kItems], int k, Key* list) {
  for (int r = 0; r < k; ++r) {
    const Key best = warp_max(keys[0]);
    if ((threadIdx.x & 31) == 0) list[r] = best;
    const bool won = keys[0] == best;
#pragma unroll
    for (int j = 0; j + 1 < kItems; ++j) keys[j] = won ? keys[j + 1] : keys[j];
    if (won) keys[kItems - 1] = 0;
  }
}

// Entries of a descending list[0..k) above key.
__device__ __forceinline__ int count_above(const Key* list, int k, Key key) {
  int lo = 0, hi = k;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (list[mid] > key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The block's top k keys, descending, into out[0..k) (global or shared). keys: the thread's own
// (sorted and consumed here). The block must hold at least k non-zero keys, all distinct; zero
// keys (empty slots) may repeat. A non-zero key's rank among the non-zero keys is its position
// in its warp's list plus the keys above it in the other lists; a zero key's rank so computed is
// at least the number of non-zero keys in the lists (>= k), so it is never written. Every slot
// of out[0..k) is written exactly once. Every thread must call it; it ends without a barrier
// (the caller syncs before reusing `lists` or reading `out` from shared memory).
__device__ void select_top_k(Key (&keys)[kItems], int k, Key (*lists)[kMaxK], Key* out) {
  sort_desc(keys);
  warp_top_k(keys, k, lists[threadIdx.x >> 5]);
  __syncthreads();
  for (int c = threadIdx.x; c < kWarps * k; c += kThreads) {
    const int w = c / k, p = c % k;
    const Key key = lists[w][p];
    int rank = p;
#pragma unroll
    for (int o = 0; o < kWarps; ++o)
      if (o != w) rank += count_above(lists[o], k, key);
    if (rank < k) out[rank] = key;
  }
}

// Thread-to-data: see the file comment. The tile's max comes from the warps' lists (each list
// starts with its warp's largest key), after the only barrier select_top_k needs.
__global__ void __launch_bounds__(kThreads)
    logits_tiles_kernel(const float* __restrict__ x, int64_t n, int k, const int32_t* __restrict__ chosen, Key* __restrict__ cand,
                 TilePartial* __restrict__ partials) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  __shared__ Key lists[kWarps][kMaxK];
  __shared__ typename SumReduce::TempStorage tmp;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kTile;
  float v[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = base + j * kThreads + threadIdx.x;
    v[j] = i < n ? x[i] : NAN;
  }
  // Read now, used after the selection: the dependent load's latency hides behind its rounds.
  const int32_t c = *chosen;
  const bool ranked = c >= 0 && c < n;
  const float vc = ranked ? x[c] : 0.0f;

  Key keys[kItems];
  Sums s{0, 0, 0, 0};
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = base + j * kThreads + threadIdx.x;
    keys[j] = make_key(v[j], i);
    s.nonfinite += i < n && !isfinite(v[j]);
  }
  select_top_k(keys, k, lists, cand + static_cast<int64_t>(blockIdx.x) * k);

  Key top = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) top = lists[w][0] > top ? lists[w][0] : top;
  const uint32_t max_ord = static_cast<uint32_t>(top >> 32);
  const double m = word_value(max_ord);
  const Key chosen_key = ranked ? make_key(vc, c) : 0ull;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t i = base + j * kThreads + threadIdx.x;
    if (i >= n) continue;
    if (isfinite(v[j])) {  // then max_ord != 0 and m is finite
      const double d = static_cast<double>(v[j]) - m, e = exp(d);
      s.z += e;
      s.ez += e * d;
    }
    s.above += make_key(v[j], i) > chosen_key;
  }
  const Sums b = SumReduce(tmp).Reduce(s, AddSums{});
  if (threadIdx.x == 0) partials[blockIdx.x] = TilePartial{b, max_ord};
}

// One CTA: the top k of the tiles' candidates, in chunks of kTile keys whose first k slots carry
// the running top k (empty, zero, in the first chunk); then the tiles' sums in a fixed order.
__global__ void __launch_bounds__(kThreads)
    logits_finish_kernel(const float* __restrict__ x, int64_t n, int k, const int32_t* __restrict__ chosen,
                  const Key* __restrict__ cand, const TilePartial* __restrict__ partials, int tiles, Record* __restrict__ rec) {
  pdl_wait();  // PDL: first, before any global read or write (pdl.cuh)
  pdl_launch_dependents();
  __shared__ Key lists[kWarps][kMaxK];
  __shared__ Key best[kMaxK];
  __shared__ typename SumReduce::TempStorage tmp;
  // Loaded first, used last: their latency overlaps the selection.
  const int32_t c = *chosen;
  const bool ranked = c >= 0 && c < n;
  const float vc = ranked ? x[c] : NAN;
  const TilePartial own = threadIdx.x < tiles ? partials[threadIdx.x] : TilePartial{{0, 0, 0, 0}, 0};

  // Each chunk holds >= k distinct non-zero keys (the first: tiles * k >= k candidates; later
  // ones: the running top k), as select_top_k needs.
  const int64_t n_cand = static_cast<int64_t>(tiles) * k;
  for (int64_t base = 0; base < n_cand; base += kTile - k) {  // the same rounds in every thread
    Key keys[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int slot = j * kThreads + threadIdx.x;
      const int64_t i = base + slot - k;
      keys[j] = slot < k ? (base == 0 ? 0ull : best[slot]) : (i < n_cand ? cand[i] : 0ull);
    }
    __syncthreads();  // every read of best[] is done before select_top_k rewrites it
    select_top_k(keys, k, lists, best);
    __syncthreads();  // best[] is complete, and lists[] read, before the next chunk (or below)
  }
  const Key top = threadIdx.x < k ? best[threadIdx.x] : 0ull;  // k <= kThreads
  const float top_logit = threadIdx.x < k ? x[key_index(top)] : 0.0f;

  // The global max is the top key's value (when finite); each tile's sums are rescaled to it,
  // tile t by thread t % kThreads, in the same order every run.
  const uint32_t max_ord = static_cast<uint32_t>(best[0] >> 32);
  const double m = word_value(max_ord);
  Sums s{0, 0, 0, 0};
  const auto add = [&](const TilePartial& p) {
    s.nonfinite += p.sums.nonfinite;
    s.above += p.sums.above;
    if (p.max_ord == 0) return;  // no finite logit: nothing to add (and its max is no number)
    const double d = static_cast<double>(word_value(p.max_ord)) - m, e = exp(d);
    s.z += e * p.sums.z;
    s.ez += e * (p.sums.ez + d * p.sums.z);
  };
  add(own);
  for (int t = threadIdx.x + kThreads; t < tiles; t += kThreads) add(partials[t]);
  const Sums b = SumReduce(tmp).Reduce(s, AddSums{});

  if (threadIdx.x < k) {
    rec->top[threadIdx.x] = top;
    rec->top_logit[threadIdx.x] = top_logit;
  }
  if (threadIdx.x == 0) {
    rec->z = b.z;
    rec->ez = b.ez;
    rec->max = max_ord ? word_value(max_ord) : -INFINITY;
    rec->chosen = c;
    rec->chosen_logit = vc;
    rec->nonfinite = b.nonfinite;
    rec->rank = ranked ? b.above : -1;
  }
}

}  // namespace

DeviceLogitsSummary::DeviceLogitsSummary(int64_t n, int k) : n_(n), k_(k) {
  if (n <= 0 || n > INT_MAX) fail("device logits summary: n must be in [1, 2^31) (got ", n, ")");
  if (k < 1 || k > kMaxTopK || k > n) fail("device logits summary: k must be in [1, min(", kMaxTopK, ", n)] (got k=", k, ", n=", n, ")");
  tiles_ = grid_1d(n, kTile, "logits summary");
  cand_.alloc(static_cast<size_t>(tiles_) * static_cast<size_t>(k) * sizeof(Key), "logits summary (candidates)");
  partials_.alloc(tiles_ * sizeof(TilePartial), "logits summary (tile partials)");
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
  auto* partials = partials_.as<TilePartial>();
  launch_pdl("logits_summary_tiles", logits_tiles_kernel, tiles_, kThreads, 0, s, x, n_, k_, chosen, cand_.as<Key>(), partials);
  launch_pdl("logits_summary_finish", logits_finish_kernel, 1, kThreads, 0, s, x, n_, k_, chosen, cand_.as<Key>(), partials,
             static_cast<int>(tiles_), record_.as<Record>());
}

void DeviceLogitsSummary::copy_to_host(cudaStream_t s, int slot) {
  CUDA_CHECK(cudaMemcpyAsync(host_[slot], record_.get(), sizeof(Record), cudaMemcpyDeviceToHost, s));
  record_visible(copied_[slot], s);
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
