// Batched node summaries. A tensor of at most kChunk elements (every node of a decode step but
// the logits) is summarised whole by one CTA of `small_kernel`, from a copy in shared memory:
// one launch for all of a part's small tensors. Larger tensors are cut into chunks of kChunk
// elements, so a 151,936-wide logits row is spread over CTAs:
//   pass1     (one CTA per chunk)  finite min/max, sum and |x| sum in double, NaN/Inf counts, the
//                                  chunk's largest |x| candidates, the 8-bit block scales of
//                                  the blocks starting in the chunk
//   finalize1 (one CTA per tensor) combines its chunks in chunk order -> min, max, mean, absmean,
//                                  outliers, block-scale min/max/mean
//   pass2     (one CTA per chunk)  sum of (x - mean)^2 in double (two passes keep std exact, as on
//                                  the CPU) and the histogram over [min, max] (shared-memory
//                                  integer counts, then integer atomics: order-independent)
//   finalize2 (one CTA per tensor) std, and the strided value grid copied as is
// small_kernel runs the same steps in the same order within its CTA (a one-chunk tensor), so
// both paths give the same bits. Every floating reduction runs in a fixed order for a fixed
// launch shape, so the results are deterministic run to run. Bins use the CPU's formula in
// double: floor((x - lo) * bins / (hi - lo)) clamped to the last bin, so a bin count matches
// summarize_host exactly.
// Outliers (|x| descending, lower index first; +-Inf largest, NaN skipped): a CTA's top k are
// among its elements at or above the smallest of its warps' largest |x| (chunk_topk), which one
// warp ranks in k rounds of a warp-wide arg-max; finalize1 ranks the chunks' candidates the
// same way. No sort of the whole tensor, and no per-element top-k upkeep.
// This file: the kernels and their launches (DeviceSummaries::enqueue); the host planner (the
// job list, the record layout, reading the records back) is summarize.cpp.
#include "probes/cuda/summarize.h"

#include <algorithm>
#include <cmath>

#include "cuda/cuda_check.h"
#include "probes/cuda/summary_records.h"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;

struct AccCombine {
  __device__ Acc operator()(const Acc& a, const Acc& b) const {
    return {a.sum + b.sum, a.abssum + b.abssum, fmin(a.d_min, b.d_min), fmax(a.d_max, b.d_max), a.d_sum + b.d_sum,
            fminf(a.lo, b.lo), fmaxf(a.hi, b.hi), a.finite + b.finite, a.nan + b.nan, a.inf + b.inf, a.blocks + b.blocks};
  }
};

__device__ Acc empty_acc() { return {0, 0, INFINITY, -INFINITY, 0, INFINITY, -INFINITY, 0, 0, 0, 0}; }

constexpr int kWarps = kThreads / 32;

// Block-wide reductions: a butterfly over the lanes, then thread 0 over the warps. Every thread
// gets the result; the order is fixed, so the bits are too.
__device__ Acc shfl_xor(const Acc& a, int m) {
  constexpr unsigned kAll = 0xffffffffu;
  return {__shfl_xor_sync(kAll, a.sum, m),    __shfl_xor_sync(kAll, a.abssum, m), __shfl_xor_sync(kAll, a.d_min, m),
          __shfl_xor_sync(kAll, a.d_max, m),  __shfl_xor_sync(kAll, a.d_sum, m),  __shfl_xor_sync(kAll, a.lo, m),
          __shfl_xor_sync(kAll, a.hi, m),     __shfl_xor_sync(kAll, a.finite, m), __shfl_xor_sync(kAll, a.nan, m),
          __shfl_xor_sync(kAll, a.inf, m),    __shfl_xor_sync(kAll, a.blocks, m)};
}

__device__ Acc block_reduce(Acc a, Acc* warp_accs /* shared, kWarps + 1 */) {
#pragma unroll 1
  for (int m = 16; m > 0; m >>= 1) a = AccCombine()(a, shfl_xor(a, m));
  if ((threadIdx.x & 31) == 0) warp_accs[threadIdx.x >> 5] = a;
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int w = 1; w < kWarps; ++w) a = AccCombine()(a, warp_accs[w]);
    warp_accs[kWarps] = a;
  }
  __syncthreads();
  return warp_accs[kWarps];
}

__device__ double block_sum(double v, double* warp_sums /* shared, kWarps + 1 */) {
#pragma unroll 1
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int w = 1; w < kWarps; ++w) v += warp_sums[w];
    warp_sums[kWarps] = v;
  }
  __syncthreads();
  return warp_sums[kWarps];
}

// a ranks before b: larger key, then lower index.
__device__ bool before(const Candidate& a, const Candidate& b) {
  return a.key > b.key || (a.key == b.key && a.key >= 0 && a.index < b.index);
}

// A thread's own top kMaxK, sorted. Every index is a compile-time constant after unrolling, so
// the array lives in registers (a runtime k <= kMaxK only limits what is read out).
struct TopK {
  Candidate c[kMaxK];
  int k;
  __device__ void init(int kk) {
    k = kk;
#pragma unroll
    for (int i = 0; i < kMaxK; ++i) c[i] = {0, -1.0f, 0.0f};
  }
  __device__ void offer(const Candidate& x) {
    if (!before(x, c[kMaxK - 1])) return;
    c[kMaxK - 1] = x;
#pragma unroll
    for (int i = kMaxK - 1; i > 0; --i)
      if (before(c[i], c[i - 1])) {
        const Candidate t = c[i];
        c[i] = c[i - 1];
        c[i - 1] = t;
      }
  }
  __device__ Candidate at(int head) const {  // c[head] without a dynamic index; empty past the end
    Candidate own{0, -1.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < kMaxK; ++i)
      if (i == head) own = c[i];
    return own;
  }
};

// The best of the warp's candidates, in every lane (butterfly over a strict order).
__device__ Candidate warp_best(Candidate c) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    Candidate o;
    o.index = __shfl_xor_sync(0xffffffffu, c.index, m);
    o.key = __shfl_xor_sync(0xffffffffu, c.key, m);
    o.value = __shfl_xor_sync(0xffffffffu, c.value, m);
    if (before(o, c)) c = o;
  }
  return c;
}

// k rounds of a warp-wide arg-max over each lane's best remaining candidate: lane 0 writes the
// warp's r-th largest to out[r] (key -1 when fewer exist). Every lane of the warp must call it;
// each gets how many of the k exist (no read back of `out`).
__device__ int warp_topk(const TopK& mine, Candidate* out) {
  int head = 0, found = 0;
#pragma unroll 1
  for (int r = 0; r < mine.k; ++r) {
    const Candidate own = mine.at(head);
    const Candidate b = warp_best(own);
    if (own.key >= 0 && own.key == b.key && own.index == b.index) ++head;  // the winner moves on
    if ((threadIdx.x & 31) == 0) out[r] = b;
    found += b.key >= 0;
  }
  return found;
}

// The block's top k into out[0..k): each warp's top k into shared memory, then warp 0 merges
// those kWarps * k (no block-wide barrier per round). Every thread must call it; thread 0 gets
// how many of the k exist.
__device__ int block_topk(const TopK& mine, Candidate* warp_lists, Candidate* out) {
  const int warp = threadIdx.x >> 5;
  warp_topk(mine, warp_lists + warp * kMaxK);
  __syncthreads();
  int found = 0;
  if (warp == 0) {
    TopK merged;
    merged.init(mine.k);
#pragma unroll 1
    for (int i = threadIdx.x; i < kWarps * kMaxK; i += 32)
      if (i % kMaxK < mine.k && warp_lists[i].key >= 0) merged.offer(warp_lists[i]);
    found = warp_topk(merged, out);
  }
  __syncthreads();
  return found;
}

__device__ Head* head_of(unsigned char* records, const Job& j) { return reinterpret_cast<Head*>(records + j.offset); }
__device__ unsigned long long* hist_of(unsigned char* records, const Job& j) {
  return reinterpret_cast<unsigned long long*>(records + j.offset + sizeof(Head));
}
__device__ float* grid_of(unsigned char* records, const Job& j) {
  return reinterpret_cast<float*>(records + j.offset + sizeof(Head) + sizeof(unsigned long long) * j.bins);
}
__device__ Candidate* outliers_of(unsigned char* records, const Job& j) {
  const size_t grid = sizeof(float) * static_cast<size_t>(j.grid_rows) * j.grid_cols;
  return reinterpret_cast<Candidate*>(records + j.offset + sizeof(Head) + sizeof(unsigned long long) * j.bins +
                                      ((grid + 7) & ~size_t(7)));
}

// Copies data[begin, end) into x[0, end - begin) (shared memory) and waits for the whole CTA:
// kBatch loads in flight per thread, so a chunk costs about one memory latency, and every
// later pass over the elements reads shared memory.
constexpr int kBatch = 8;
__device__ void stage(const float* data, int64_t begin, int64_t end, float* x) {
  const int n = static_cast<int>(end - begin);
#pragma unroll 1
  for (int base = threadIdx.x; base < n; base += kThreads * kBatch) {
    float v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * kThreads;
      v[u] = i < n ? data[begin + i] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = base + u * kThreads;
      if (i < n) x[i] = v[u];
    }
  }
  __syncthreads();
}

// The block scales d = amax/127 of the quantization blocks that START in [begin, end). One warp
// per block (lane l reads elements l, l + 32, ... of it: coalesced), a shuffle max, and lane 0
// adds the scale to its accumulator (the block-wide Acc reduction then combines them).
__device__ void scale_blocks(const Job& j, const float* data, int64_t begin, int64_t end, Acc& a) {
  const int64_t bpr = (j.cols + j.scale_block - 1) / j.scale_block;  // blocks per row
  const int64_t b_lo = (begin / j.cols) * bpr, b_hi = ((end - 1) / j.cols + 1) * bpr;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll 1
  for (int64_t b = b_lo + warp; b < b_hi; b += kThreads / 32) {  // the same trip count in every lane
    const int64_t row = b / bpr, c0 = (b % bpr) * j.scale_block;
    const int64_t start = row * j.cols + c0;
    if (start < begin || start >= end) continue;
    const int64_t len = min(static_cast<int64_t>(j.scale_block), j.cols - c0);
    float amax = 0;
#pragma unroll 1
    for (int64_t i = lane; i < len; i += 32) {
      const float v = data[start + i];
      if (isfinite(v)) amax = fmaxf(amax, fabsf(v));
    }
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
    if (lane == 0) {
      const double d = amax / 127.0;
      a.d_min = fmin(a.d_min, d);
      a.d_max = fmax(a.d_max, d);
      a.d_sum += d;
      ++a.blocks;
    }
  }
}

// An element's outlier key: |x|, Inf for +-Inf, -1 for NaN (never an outlier).
__device__ float outlier_key(float v) { return isnan(v) ? -1.0f : (isinf(v) ? INFINITY : fabsf(v)); }

// Pass 1 over this thread's elements of the staged x[0, n): the statistics and the largest key.
__device__ void pass1_elements(const float* x, int n, Acc& a, float& kmax) {
#pragma unroll 1
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float v = x[i];
    kmax = fmaxf(kmax, outlier_key(v));
    if (isnan(v)) {
      ++a.nan;
    } else if (isinf(v)) {
      ++a.inf;
    } else {
      a.sum += v;
      a.abssum += fabsf(v);
      a.lo = fminf(a.lo, v);
      a.hi = fmaxf(a.hi, v);
      ++a.finite;
    }
  }
}

// Shared memory of chunk_topk.
constexpr int kMaxCandidates = 256;
static_assert(kMaxK <= kWarps, "chunk_topk's bound needs a warp per outlier");
struct TopkScratch {
  float warp_max[kWarps];
  unsigned int count;
  Candidate candidates[kMaxCandidates];
  Candidate warp_lists[kWarps * kMaxK];
};

// The top k (k <= kWarps) of the staged x[0, n), element i being the tensor's begin + i, into
// out[0, k) (key -1 past the end); `kmax` is this thread's largest key. Every warp's largest
// key is an element's, so at least kWarps elements reach the smallest of them, T: the top k are
// among the elements with key >= T (a few, for real data), which one warp then ranks. With more
// than kMaxCandidates (ties) every thread ranks its own elements instead (the general path:
// with it for every chunk, a decode step's logits pass 1 took ~30 us on the H200, ~14 us
// without). Thread 0 gets how many of the k exist.
__device__ int chunk_topk(const float* x, int n, int64_t begin, int k, float kmax, TopkScratch& sh, Candidate* out) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) kmax = fmaxf(kmax, __shfl_xor_sync(0xffffffffu, kmax, m));
  if (lane == 0) sh.warp_max[warp] = kmax;
  if (threadIdx.x == 0) sh.count = 0;
  __syncthreads();
  float t = sh.warp_max[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) t = fminf(t, sh.warp_max[w]);
#pragma unroll 1
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float key = outlier_key(x[i]);
    if (key < 0 || key < t) continue;
    const unsigned int slot = atomicAdd(&sh.count, 1u);
    if (slot < kMaxCandidates) sh.candidates[slot] = {begin + i, key, x[i]};
  }
  __syncthreads();
  TopK top;
  top.init(k);
  if (sh.count > kMaxCandidates) {
#pragma unroll 1
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const float key = outlier_key(x[i]);
      if (key >= 0) top.offer({begin + i, key, x[i]});
    }
    return block_topk(top, sh.warp_lists, out);
  }
  int found = 0;
  if (warp == 0) {
#pragma unroll 1
    for (unsigned int i = lane; i < sh.count; i += 32) top.offer(sh.candidates[i]);
    found = warp_topk(top, out);
  }
  __syncthreads();
  return found;
}

// The head from the tensor's combined pass-1 results (std and the histogram's tails come later).
__device__ void write_head(Head* h, const Job& j, const Acc& a) {
  const double nan = __longlong_as_double(0x7ff8000000000000ll);
  h->count = j.n;
  h->nan = a.nan;
  h->inf = a.inf;
  h->finite = a.finite;
  h->underflow = h->overflow = 0;
  h->min = a.finite ? a.lo : nan;
  h->max = a.finite ? a.hi : nan;
  h->mean = a.finite ? a.sum / static_cast<double>(a.finite) : nan;
  h->absmean = a.finite ? a.abssum / static_cast<double>(a.finite) : nan;
  h->std = nan;
  h->blocks = a.blocks;
  h->d_min = a.blocks ? a.d_min : 0;
  h->d_max = a.blocks ? a.d_max : 0;
  h->d_sum = a.d_sum;
}

// What pass 2 needs from pass 1: the mean and the histogram's range.
struct Pass2Args {
  double mean, lo, scale;
  int bins;
  __device__ Pass2Args(const Head& h, int bins_) : bins(bins_) {
    const bool any_finite = h.finite > 0;
    mean = any_finite ? h.mean : 0.0;
    lo = any_finite ? h.min : 0.0;
    const double hi = any_finite ? h.max : 0.0;
    scale = hi - lo > 0 ? bins / (hi - lo) : 0.0;
  }
};

// Pass 2 over this thread's elements of the staged x[0, n): its sum of squared deviations, its
// +-Inf counts and its histogram counts (atomics into the block's shared bins).
__device__ void pass2_elements(const float* x, int n, const Pass2Args& p, unsigned int* bins_shared, double& sq,
                               unsigned int& under, unsigned int& over) {
#pragma unroll 1
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float v = x[i];
    if (isnan(v)) continue;
    if (isinf(v)) {
      if (v < 0) ++under; else ++over;
      continue;
    }
    const double d = v - p.mean;
    sq += d * d;
    if (p.bins > 0) {
      long long b = static_cast<long long>((static_cast<double>(v) - p.lo) * p.scale);
      b = b < 0 ? 0 : (b >= p.bins ? p.bins - 1 : b);
      atomicAdd(&bins_shared[b], 1u);
    }
  }
}

// The strided value grid of the tensor `data`.
__device__ void copy_grid(const Job& j, const float* data, float* grid) {
  const int cells = j.grid_rows * j.grid_cols;
#pragma unroll 1
  for (int k = threadIdx.x; k < cells; k += kThreads) {
    const int64_t r = k / j.grid_cols, col = k % j.grid_cols;
    grid[k] = data[r * j.row_stride * j.cols + col * j.col_stride];
  }
}

// A whole tensor of at most kChunk elements per CTA (tensor ids[blockIdx.x]): copied once into
// shared memory, then both passes, the outliers, block scales and grid from there. Dynamic
// shared memory: the largest tensor's elements, then the histogram's bins.
__global__ void __launch_bounds__(kThreads) small_kernel(const Job* jobs, const int* ids, int max_n, unsigned char* records) {
  __shared__ union {
    Acc acc[kWarps + 1];
    double sum[kWarps + 1];
  } tmp;
  __shared__ TopkScratch topk;
  __shared__ Head head;
  __shared__ unsigned int tails[2];  // -Inf and +Inf counts
  extern __shared__ float staged[];
  const Job j = jobs[ids[blockIdx.x]];
  float* x = staged;
  unsigned int* bins_shared = reinterpret_cast<unsigned int*>(staged + max_n);
  const int n = static_cast<int>(j.n);
  for (int b = threadIdx.x; b < j.bins; b += kThreads) bins_shared[b] = 0;
  if (threadIdx.x < 2) tails[threadIdx.x] = 0;
  stage(j.data, 0, n, x);
  Acc a = empty_acc();
  float kmax = -1.0f;
  pass1_elements(x, n, a, kmax);
  if (j.scale_block > 0 && j.n > 0) scale_blocks(j, x, 0, j.n, a);
  a = block_reduce(a, tmp.acc);
  Head* h = head_of(records, j);
  if (threadIdx.x == 0) write_head(&head, j, a);
  __syncthreads();
  const int found = j.k > 0 ? chunk_topk(x, n, 0, j.k, kmax, topk, outliers_of(records, j)) : 0;  // ends with a barrier
  const Pass2Args p(head, j.bins);
  double sq = 0;
  unsigned int under = 0, over = 0;
  pass2_elements(x, n, p, bins_shared, sq, under, over);
  sq = block_sum(sq, tmp.sum);
  if (under) atomicAdd(&tails[0], under);
  if (over) atomicAdd(&tails[1], over);
  copy_grid(j, x, grid_of(records, j));
  __syncthreads();
  unsigned long long* hist = hist_of(records, j);
  for (int b = threadIdx.x; b < j.bins; b += kThreads) hist[b] = bins_shared[b];
  if (threadIdx.x == 0) {
    head.underflow = tails[0];
    head.overflow = tails[1];
    if (head.finite > 0) head.std = sqrt(sq / static_cast<double>(head.finite));
    head.n_outliers = found;
    *h = head;
  }
}

__global__ void __launch_bounds__(kThreads) pass1_kernel(const Job* jobs, const int* chunk_job, int chunk0,
                                                         Partial* partials, Candidate* candidates) {
  __shared__ Acc tmp[kWarps + 1];
  __shared__ TopkScratch topk;
  __shared__ float x[kChunk];
  const int c = chunk0 + static_cast<int>(blockIdx.x);
  const Job j = jobs[chunk_job[c]];
  const int64_t begin = (c - j.first_chunk) * kChunk, end = min(j.n, begin + kChunk);
  stage(j.data, begin, end, x);
  Acc a = empty_acc();
  float kmax = -1.0f;
  const int n = static_cast<int>(end - begin);
  pass1_elements(x, n, a, kmax);
  if (j.scale_block > 0 && begin < end) scale_blocks(j, j.data, begin, end, a);
  a = block_reduce(a, tmp);
  if (threadIdx.x == 0) partials[c].acc = a;
  if (j.k > 0) chunk_topk(x, n, begin, j.k, kmax, topk, candidates + static_cast<int64_t>(c) * kMaxK);
}

__global__ void __launch_bounds__(kThreads) finalize1_kernel(const Job* jobs, const int* ids, const Partial* partials,
                                                             const Candidate* candidates, unsigned char* records) {
  __shared__ Acc tmp[kWarps + 1];
  __shared__ Candidate warp_lists[kWarps * kMaxK];
  const Job j = jobs[ids[blockIdx.x]];
  Acc a = empty_acc();
  TopK top;
  top.init(j.k);
#pragma unroll 1
  for (int i = threadIdx.x; i < j.n_chunks; i += kThreads) a = AccCombine()(a, partials[j.first_chunk + i].acc);
  // The chunks' candidates spread over the threads (an offer per element costs: see chunk_topk).
#pragma unroll 1
  for (int i = threadIdx.x; i < j.n_chunks * j.k; i += kThreads) {
    const Candidate& x = candidates[static_cast<int64_t>(j.first_chunk + i / j.k) * kMaxK + i % j.k];
    if (x.key >= 0) top.offer(x);
  }
  a = block_reduce(a, tmp);
  unsigned long long* hist = hist_of(records, j);
  for (int b = threadIdx.x; b < j.bins; b += kThreads) hist[b] = 0;
  Head* h = head_of(records, j);
  if (threadIdx.x == 0) write_head(h, j, a);
  __syncthreads();
  const int found = j.k > 0 ? block_topk(top, warp_lists, outliers_of(records, j)) : 0;
  if (threadIdx.x == 0) h->n_outliers = found;
}

__global__ void __launch_bounds__(kThreads) pass2_kernel(const Job* jobs, const int* chunk_job, int chunk0,
                                                         Partial* partials, unsigned char* records) {
  __shared__ double tmp[kWarps + 1];
  extern __shared__ float x[];  // the chunk, then the histogram's bins
  unsigned int* bins_shared = reinterpret_cast<unsigned int*>(x + kChunk);
  const int c = chunk0 + static_cast<int>(blockIdx.x);
  const Job j = jobs[chunk_job[c]];
  Head* h = head_of(records, j);
  const Pass2Args p(*h, j.bins);
  for (int b = threadIdx.x; b < j.bins; b += kThreads) bins_shared[b] = 0;
  const int64_t begin = (c - j.first_chunk) * kChunk, end = min(j.n, begin + kChunk);
  stage(j.data, begin, end, x);
  double sq = 0;
  unsigned int under = 0, over = 0;
  pass2_elements(x, static_cast<int>(end - begin), p, bins_shared, sq, under, over);
  sq = block_sum(sq, tmp);
  if (threadIdx.x == 0) partials[c].sumsq = sq;
  if (under) atomicAdd(reinterpret_cast<unsigned long long*>(&h->underflow), static_cast<unsigned long long>(under));
  if (over) atomicAdd(reinterpret_cast<unsigned long long*>(&h->overflow), static_cast<unsigned long long>(over));
  __syncthreads();
  unsigned long long* hist = hist_of(records, j);
  for (int b = threadIdx.x; b < j.bins; b += kThreads)
    if (bins_shared[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(bins_shared[b]));
}

__global__ void __launch_bounds__(kThreads) finalize2_kernel(const Job* jobs, const int* ids, const Partial* partials,
                                                             unsigned char* records) {
  __shared__ double tmp[kWarps + 1];
  const Job j = jobs[ids[blockIdx.x]];
  double sq = 0;
  for (int i = threadIdx.x; i < j.n_chunks; i += kThreads) sq += partials[j.first_chunk + i].sumsq;
  sq = block_sum(sq, tmp);
  Head* h = head_of(records, j);
  if (threadIdx.x == 0 && h->finite > 0) h->std = sqrt(sq / static_cast<double>(h->finite));
  copy_grid(j, j.data, grid_of(records, j));
}

}  // namespace

// The small and chunked tensors' kernels may stage more than the default 48 KB of dynamic shared
// memory (a tensor or chunk and the bins).
void DeviceSummaries::allow_large_shared_memory() {
  const int most = static_cast<int>(sizeof(float) * (kChunk + kMaxBins));
  CUDA_CHECK(cudaFuncSetAttribute(small_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most));
  CUDA_CHECK(cudaFuncSetAttribute(pass2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most));
}

void DeviceSummaries::enqueue(cudaStream_t small, cudaStream_t chunked, size_t first, size_t end) {
  // Tensors [first, end) are small ids [s0, s1) and large ids [l0, l1) of their lists.
  const auto [s0, s1, l0, l1] = id_ranges(first, end);
  const Job* j = jobs_.as<Job>();
  auto* rec = records_.as<unsigned char>();
  const int* ids = ids_.as<int>();
  if (s1 > s0) {
    int64_t max_n = 0;
    for (size_t i = first; i < end; ++i)
      if (layout_[i].n_chunks == 0) max_n = std::max(max_n, layout_[i].rows * layout_[i].cols);
    const size_t shared = sizeof(float) * static_cast<size_t>(max_n + spec_.hist_bins);
    small_kernel<<<static_cast<unsigned>(s1 - s0), kThreads, shared, small>>>(j, ids + s0, static_cast<int>(max_n), rec);
    check_launch("summary_small_kernel", small);
  }
  if (l1 == l0) return;
  // The chunks of a range of tensors are contiguous (only the large tensors have any).
  const int chunk0 = layout_[first].first_chunk;
  const int chunks = (end < layout_.size() ? layout_[end].first_chunk : n_chunks_) - chunk0;
  const unsigned jobs = static_cast<unsigned>(l1 - l0);
  const int* large_ids = ids + n_small_ + l0;
  auto* cand = candidates_.as<Candidate>();
  pass1_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, chunked>>>(j, chunk_job_.as<int>(), chunk0, partials_.as<Partial>(), cand);
  check_launch("summary_pass1_kernel", chunked);
  finalize1_kernel<<<jobs, kThreads, 0, chunked>>>(j, large_ids, partials_.as<Partial>(), cand, rec);
  check_launch("summary_finalize1_kernel", chunked);
  const size_t shared = sizeof(float) * static_cast<size_t>(kChunk + spec_.hist_bins);
  pass2_kernel<<<static_cast<unsigned>(chunks), kThreads, shared, chunked>>>(j, chunk_job_.as<int>(), chunk0, partials_.as<Partial>(), rec);
  check_launch("summary_pass2_kernel", chunked);
  finalize2_kernel<<<jobs, kThreads, 0, chunked>>>(j, large_ids, partials_.as<Partial>(), rec);
  check_launch("summary_finalize2_kernel", chunked);
}

}  // namespace minfer::cuda
