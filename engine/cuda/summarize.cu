// Batched node summaries. Work is cut into chunks of kChunk elements across all tensors, so a
// 151,936-wide logits row and a 64-wide norm row are both spread over CTAs:
//   pass1     (one CTA per chunk)  finite min/max, sum and |x| sum in double, NaN/Inf counts, the
//                                  chunk's largest |x| candidates, the 8-bit block scales of
//                                  the blocks starting in the chunk
//   finalize1 (one CTA per tensor) combines its chunks in chunk order -> min, max, mean, absmean,
//                                  outliers, block-scale min/max/mean
//   pass2     (one CTA per chunk)  sum of (x - mean)^2 in double (two passes keep std exact, as on
//                                  the CPU) and the histogram over [min, max] (shared-memory
//                                  integer counts, then integer atomics: order-independent)
//   finalize2 (one CTA per tensor) std, and the strided value grid copied as is
// Every floating reduction runs in a fixed order for a fixed launch shape, so the results are
// deterministic run to run. Bins use the CPU's formula in double: floor((x - lo) * bins / (hi -
// lo)) clamped to the last bin, so a bin count matches summarize_host exactly.
// Outliers: each thread keeps its own top-k (|x| descending, lower index first; +-Inf largest,
// NaN skipped), then k rounds of a block-wide arg-max pick the chunk's (and then the tensor's)
// top-k: no sort of the whole tensor.
#include "cuda/summarize.h"

#include <cub/block/block_reduce.cuh>

#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/summarize.h"
#include "cuda/cuda_check.h"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 8192;
constexpr int kMaxBins = 4096;
constexpr int kMaxK = DeviceSummaries::kMaxOutliers;  // a compile-time size keeps TopK in registers

struct Job {
  const float* data;
  int64_t n, rows, cols, row_stride, col_stride;
  int grid_rows, grid_cols, bins, first_chunk, n_chunks, k, scale_block;
  unsigned long long offset;
};

// Record layout in the record buffer (8-byte aligned): Head, uint64 hist[bins], float grid[..],
// Candidate outliers[k].
struct Head {
  double min, max, mean, absmean, std;
  long long count, nan, inf, underflow, overflow, finite;
  double d_min, d_max, d_sum;
  long long blocks, n_outliers;
};

// An outlier candidate; key = |x| (Inf for +-Inf), -1 for an empty slot.
struct Candidate {
  long long index;
  float key, value;
};

struct Acc {
  double sum, abssum, d_min, d_max, d_sum;
  float lo, hi;
  long long finite, nan, inf, blocks;
};

// A chunk's pass-1 results and its pass-2 sum of squared deviations.
struct Partial {
  Acc acc;
  double sumsq;
};

struct AccCombine {
  __device__ Acc operator()(const Acc& a, const Acc& b) const {
    return {a.sum + b.sum, a.abssum + b.abssum, fmin(a.d_min, b.d_min), fmax(a.d_max, b.d_max), a.d_sum + b.d_sum,
            fminf(a.lo, b.lo), fmaxf(a.hi, b.hi), a.finite + b.finite, a.nan + b.nan, a.inf + b.inf, a.blocks + b.blocks};
  }
};

__device__ Acc empty_acc() { return {0, 0, INFINITY, -INFINITY, 0, INFINITY, -INFINITY, 0, 0, 0, 0}; }

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
// warp's r-th largest to out[r] (key -1 when fewer exist). Every lane of the warp must call it.
__device__ void warp_topk(const TopK& mine, Candidate* out) {
  int head = 0;
  for (int r = 0; r < mine.k; ++r) {
    const Candidate own = mine.at(head);
    const Candidate b = warp_best(own);
    if (own.key >= 0 && own.key == b.key && own.index == b.index) ++head;  // the winner moves on
    if ((threadIdx.x & 31) == 0) out[r] = b;
  }
}

constexpr int kWarps = kThreads / 32;

// The block's top k into out[0..k): each warp's top k into shared memory, then warp 0 merges
// those kWarps * k (no block-wide barrier per round). Every thread must call it.
__device__ void block_topk(const TopK& mine, Candidate* warp_lists, Candidate* out) {
  const int warp = threadIdx.x >> 5;
  warp_topk(mine, warp_lists + warp * kMaxK);
  __syncthreads();
  if (warp == 0) {
    TopK merged;
    merged.init(mine.k);
    for (int i = threadIdx.x; i < kWarps * kMaxK; i += 32)
      if (i % kMaxK < mine.k && warp_lists[i].key >= 0) merged.offer(warp_lists[i]);
    warp_topk(merged, out);
  }
  __syncthreads();
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

// f(x, i) for this thread's elements i = begin + t, begin + t + kThreads, ... < end, in index
// order, with kBatch loads issued before the first use: a chunk's few elements per thread cost
// one memory latency, not one each.
constexpr int kBatch = 8;
template <class F>
__device__ __forceinline__ void for_each_element(const float* data, int64_t begin, int64_t end, F f) {
  for (int64_t base = begin + threadIdx.x; base < end; base += static_cast<int64_t>(kThreads) * kBatch) {
    float v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t i = base + static_cast<int64_t>(u) * kThreads;
      v[u] = i < end ? data[i] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t i = base + static_cast<int64_t>(u) * kThreads;
      if (i < end) f(v[u], i);
    }
  }
}

// The block scales d = amax/127 of the quantization blocks that START in [begin, end). One warp
// per block (lane l reads elements l, l + 32, ... of it: coalesced), a shuffle max, and lane 0
// adds the scale to its accumulator (the block-wide Acc reduction then combines them).
__device__ void scale_blocks(const Job& j, int64_t begin, int64_t end, Acc& a) {
  const int64_t bpr = (j.cols + j.scale_block - 1) / j.scale_block;  // blocks per row
  const int64_t b_lo = (begin / j.cols) * bpr, b_hi = ((end - 1) / j.cols + 1) * bpr;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t b = b_lo + warp; b < b_hi; b += kThreads / 32) {  // the same trip count in every lane
    const int64_t row = b / bpr, c0 = (b % bpr) * j.scale_block;
    const int64_t start = row * j.cols + c0;
    if (start < begin || start >= end) continue;
    const int64_t len = min(static_cast<int64_t>(j.scale_block), j.cols - c0);
    float amax = 0;
    for (int64_t i = lane; i < len; i += 32) {
      const float v = j.data[start + i];
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

__global__ void __launch_bounds__(kThreads) pass1_kernel(const Job* jobs, const int* chunk_job, int chunk0,
                                                         Partial* partials, Candidate* candidates) {
  using Reduce = cub::BlockReduce<Acc, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ Candidate warp_lists[kWarps * kMaxK];
  const int c = chunk0 + static_cast<int>(blockIdx.x);
  const Job j = jobs[chunk_job[c]];
  const int64_t begin = (c - j.first_chunk) * kChunk, end = min(j.n, begin + kChunk);
  Acc a = empty_acc();
  TopK top;
  top.init(j.k);
  for_each_element(j.data, begin, end, [&](float x, int64_t i) {
    if (isnan(x)) {
      ++a.nan;
    } else if (isinf(x)) {
      ++a.inf;
      top.offer({i, INFINITY, x});
    } else {
      a.sum += x;
      a.abssum += fabsf(x);
      a.lo = fminf(a.lo, x);
      a.hi = fmaxf(a.hi, x);
      ++a.finite;
      top.offer({i, fabsf(x), x});
    }
  });
  if (j.scale_block > 0 && begin < end) scale_blocks(j, begin, end, a);
  a = Reduce(tmp).Reduce(a, AccCombine());
  if (threadIdx.x == 0) partials[c].acc = a;
  if (j.k > 0) block_topk(top, warp_lists, candidates + static_cast<int64_t>(c) * kMaxK);
}

__global__ void __launch_bounds__(kThreads) finalize1_kernel(const Job* jobs, int job0, const Partial* partials,
                                                             const Candidate* candidates, unsigned char* records) {
  using Reduce = cub::BlockReduce<Acc, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ Candidate warp_lists[kWarps * kMaxK];
  const Job j = jobs[job0 + static_cast<int>(blockIdx.x)];
  Acc a = empty_acc();
  TopK top;
  top.init(j.k);
  for (int i = threadIdx.x; i < j.n_chunks; i += kThreads) {
    const int c = j.first_chunk + i;
    a = AccCombine()(a, partials[c].acc);
    for (int r = 0; r < j.k; ++r) {
      const Candidate& x = candidates[static_cast<int64_t>(c) * kMaxK + r];
      if (x.key >= 0) top.offer(x);
    }
  }
  a = Reduce(tmp).Reduce(a, AccCombine());
  unsigned long long* hist = hist_of(records, j);
  for (int b = threadIdx.x; b < j.bins; b += kThreads) hist[b] = 0;
  Head* h = head_of(records, j);
  if (threadIdx.x == 0) {
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
  __syncthreads();
  if (j.k > 0) {
    Candidate* out = outliers_of(records, j);
    block_topk(top, warp_lists, out);
    if (threadIdx.x == 0) {
      long long n = 0;
      while (n < j.k && out[n].key >= 0) ++n;
      h->n_outliers = n;
    }
  } else if (threadIdx.x == 0) {
    h->n_outliers = 0;
  }
}

__global__ void __launch_bounds__(kThreads) pass2_kernel(const Job* jobs, const int* chunk_job, int chunk0,
                                                         Partial* partials, unsigned char* records) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  extern __shared__ unsigned int bins_shared[];
  const int c = chunk0 + static_cast<int>(blockIdx.x);
  const Job j = jobs[chunk_job[c]];
  Head* h = head_of(records, j);
  const bool any_finite = h->finite > 0;
  const double mean = any_finite ? h->mean : 0.0;
  const double lo = any_finite ? h->min : 0.0, hi = any_finite ? h->max : 0.0;
  const double scale = hi - lo > 0 ? j.bins / (hi - lo) : 0.0;
  for (int b = threadIdx.x; b < j.bins; b += kThreads) bins_shared[b] = 0;
  __syncthreads();
  const int64_t begin = (c - j.first_chunk) * kChunk, end = min(j.n, begin + kChunk);
  double sq = 0;
  unsigned int under = 0, over = 0;
  for_each_element(j.data, begin, end, [&](float x, int64_t) {
    if (isnan(x)) return;
    if (isinf(x)) {
      if (x < 0) ++under; else ++over;
      return;
    }
    const double d = x - mean;
    sq += d * d;
    if (j.bins > 0) {
      long long b = static_cast<long long>((static_cast<double>(x) - lo) * scale);
      b = b < 0 ? 0 : (b >= j.bins ? j.bins - 1 : b);
      atomicAdd(&bins_shared[b], 1u);
    }
  });
  sq = Reduce(tmp).Sum(sq);
  if (threadIdx.x == 0) partials[c].sumsq = sq;
  if (under) atomicAdd(reinterpret_cast<unsigned long long*>(&h->underflow), static_cast<unsigned long long>(under));
  if (over) atomicAdd(reinterpret_cast<unsigned long long*>(&h->overflow), static_cast<unsigned long long>(over));
  __syncthreads();
  unsigned long long* hist = hist_of(records, j);
  for (int b = threadIdx.x; b < j.bins; b += kThreads)
    if (bins_shared[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(bins_shared[b]));
}

__global__ void __launch_bounds__(kThreads) finalize2_kernel(const Job* jobs, int job0, const Partial* partials,
                                                             unsigned char* records) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const Job j = jobs[job0 + static_cast<int>(blockIdx.x)];
  double sq = 0;
  for (int i = threadIdx.x; i < j.n_chunks; i += kThreads) sq += partials[j.first_chunk + i].sumsq;
  sq = Reduce(tmp).Sum(sq);
  Head* h = head_of(records, j);
  if (threadIdx.x == 0 && h->finite > 0) h->std = sqrt(sq / static_cast<double>(h->finite));
  float* grid = grid_of(records, j);
  const int cells = j.grid_rows * j.grid_cols;
  for (int k = threadIdx.x; k < cells; k += kThreads) {
    const int64_t r = k / j.grid_cols, col = k % j.grid_cols;
    grid[k] = j.data[r * j.row_stride * j.cols + col * j.col_stride];
  }
}

size_t align8(size_t n) { return (n + 7) & ~size_t(7); }

}  // namespace

DeviceSummaries::DeviceSummaries(const std::vector<SummaryTensor>& tensors, const SummarySpec& spec, int outliers)
    : spec_(spec), outliers_(outliers) {
  if (spec.hist_bins < 0 || spec.hist_bins > kMaxBins)
    fail("device summaries: ", spec.hist_bins, " histogram bins (at most ", kMaxBins, ")");
  if (outliers < 0 || outliers > kMaxOutliers)
    fail("device summaries: ", outliers, " outliers per tensor (at most ", kMaxOutliers, ")");
  std::vector<Job> jobs;
  std::vector<int> chunk_job;
  size_t offset = 0;
  for (const SummaryTensor& t : tensors) {
    Layout l{t.rows, t.cols, 1, 1, 0, 0, t.scale_block, offset, static_cast<int>(chunk_job.size()), 0};
    if (spec.grid_rows > 0 && spec.grid_cols > 0 && t.rows > 0 && t.cols > 0) {
      l.row_stride = grid_stride(t.rows, spec.grid_rows);
      l.col_stride = grid_stride(t.cols, spec.grid_cols);
      l.grid_rows = static_cast<int>((t.rows + l.row_stride - 1) / l.row_stride);
      l.grid_cols = static_cast<int>((t.cols + l.col_stride - 1) / l.col_stride);
    }
    if (t.scale_block > 0 && t.cols < t.scale_block)
      fail("device summaries: block scales of ", t.scale_block, "-element blocks over rows of ", t.cols);
    const int64_t n = t.rows * t.cols;
    const int n_chunks = static_cast<int>((n + kChunk - 1) / kChunk);
    l.n_chunks = n_chunks;
    jobs.push_back(Job{t.data, n, t.rows, t.cols, l.row_stride, l.col_stride, l.grid_rows, l.grid_cols, spec.hist_bins,
                       static_cast<int>(chunk_job.size()), n_chunks, outliers, t.scale_block, offset});
    chunk_job.insert(chunk_job.end(), static_cast<size_t>(n_chunks), static_cast<int>(jobs.size() - 1));
    offset += sizeof(Head) + sizeof(unsigned long long) * static_cast<size_t>(spec.hist_bins) +
              align8(sizeof(float) * static_cast<size_t>(l.grid_rows) * static_cast<size_t>(l.grid_cols)) +
              sizeof(Candidate) * static_cast<size_t>(outliers);
    offset = align8(offset);
    layout_.push_back(l);
  }
  record_bytes_ = std::max<size_t>(offset, 8);
  n_chunks_ = static_cast<int>(chunk_job.size());
  const size_t chunks = std::max<size_t>(chunk_job.size(), 1);
  jobs_.alloc(std::max<size_t>(jobs.size(), 1) * sizeof(Job), "device summaries (job list)");
  chunk_job_.alloc(chunks * sizeof(int), "device summaries (chunk list)");
  partials_.alloc(chunks * sizeof(Partial), "device summaries (partials)");
  candidates_.alloc(chunks * kMaxK * sizeof(Candidate), "device summaries (outlier candidates)");
  records_.alloc(record_bytes_, "device summaries (records)");
  if (!jobs.empty()) CUDA_CHECK(cudaMemcpy(jobs_.get(), jobs.data(), jobs.size() * sizeof(Job), cudaMemcpyHostToDevice));
  if (!chunk_job.empty())
    CUDA_CHECK(cudaMemcpy(chunk_job_.get(), chunk_job.data(), chunk_job.size() * sizeof(int), cudaMemcpyHostToDevice));
  for (int s = 0; s < 2; ++s) {
    CUDA_CHECK(cudaMallocHost(&host_[s], record_bytes_));
    CUDA_CHECK(cudaEventCreateWithFlags(&copied_[s], cudaEventDisableTiming));
  }
}

DeviceSummaries::~DeviceSummaries() {
  for (int s = 0; s < 2; ++s) {
    if (host_[s]) cudaFreeHost(host_[s]);
    if (copied_[s]) cudaEventDestroy(copied_[s]);
  }
}

void DeviceSummaries::enqueue(cudaStream_t s) { enqueue(s, 0, layout_.size()); }

void DeviceSummaries::enqueue(cudaStream_t s, size_t first, size_t end) {
  if (first > end || end > layout_.size())
    fail("device summaries: tensor range [", first, ", ", end, ") outside the ", layout_.size(), " tensors");
  if (first == end) return;
  const unsigned jobs = static_cast<unsigned>(end - first);
  const int job0 = static_cast<int>(first);
  // The range's chunks are contiguous: tensor i owns [first_chunk, first_chunk + n_chunks).
  const int chunk0 = layout_[first].first_chunk;
  const int chunks = layout_[end - 1].first_chunk + layout_[end - 1].n_chunks - chunk0;
  const Job* j = jobs_.as<Job>();
  auto* rec = records_.as<unsigned char>();
  auto* cand = candidates_.as<Candidate>();
  if (chunks > 0) {
    pass1_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, s>>>(j, chunk_job_.as<int>(), chunk0, partials_.as<Partial>(), cand);
    check_launch("summary_pass1_kernel", s);
  }
  finalize1_kernel<<<jobs, kThreads, 0, s>>>(j, job0, partials_.as<Partial>(), cand, rec);
  check_launch("summary_finalize1_kernel", s);
  if (chunks > 0) {
    const size_t shared = sizeof(unsigned int) * static_cast<size_t>(spec_.hist_bins);
    pass2_kernel<<<static_cast<unsigned>(chunks), kThreads, shared, s>>>(j, chunk_job_.as<int>(), chunk0, partials_.as<Partial>(), rec);
    check_launch("summary_pass2_kernel", s);
  }
  finalize2_kernel<<<jobs, kThreads, 0, s>>>(j, job0, partials_.as<Partial>(), rec);
  check_launch("summary_finalize2_kernel", s);
}

void DeviceSummaries::copy_to_host(cudaStream_t s, int slot) {
  CUDA_CHECK(cudaMemcpyAsync(host_[slot], records_.get(), record_bytes_, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaEventRecord(copied_[slot], s));
  arrived_[slot] = false;
}

const unsigned char* DeviceSummaries::record(int slot, size_t i) const {
  if (!arrived_[slot]) {  // one wait per step, not one per node
    event_sync_bounded(copied_[slot], "the step's node summaries");
    arrived_[slot] = true;
  }
  return host_[slot] + layout_.at(i).offset;
}

TensorSummary DeviceSummaries::read(int slot, size_t i) const {
  const unsigned char* rec = record(slot, i);
  const Layout& l = layout_[i];
  Head h;
  std::memcpy(&h, rec, sizeof h);
  TensorSummary out;
  if (spec_.stats || spec_.hist_bins > 0) {  // as summarize_host: stats also when the histogram needs them
    out.stats = TensorStats{h.min, h.max, h.mean, h.absmean, h.std, h.count, h.nan, h.inf};
  }
  if (l.grid_rows > 0) {
    out.grid.rows = l.grid_rows;
    out.grid.cols = l.grid_cols;
    out.grid.row_stride = l.row_stride;
    out.grid.col_stride = l.col_stride;
    out.grid.values.resize(static_cast<size_t>(l.grid_rows) * static_cast<size_t>(l.grid_cols));
    std::memcpy(out.grid.values.data(), rec + sizeof(Head) + sizeof(unsigned long long) * static_cast<size_t>(spec_.hist_bins),
                out.grid.values.size() * sizeof(float));
  }
  if (spec_.hist_bins > 0) {
    const bool any_finite = h.finite > 0;
    out.hist.lo = any_finite ? h.min : 0;
    out.hist.hi = any_finite ? h.max : 0;
    out.hist.counts.resize(static_cast<size_t>(spec_.hist_bins));  // counts < 2^63: same bits as uint64
    static_assert(sizeof(int64_t) == sizeof(unsigned long long));
    std::memcpy(out.hist.counts.data(), rec + sizeof(Head), out.hist.counts.size() * sizeof(int64_t));
    out.hist.underflow = h.underflow;
    out.hist.overflow = h.overflow;
  }
  return out;
}

std::vector<Outlier> DeviceSummaries::read_outliers(int slot, size_t i) const {
  const unsigned char* rec = record(slot, i);
  const Layout& l = layout_[i];
  Head h;
  std::memcpy(&h, rec, sizeof h);
  const size_t at = sizeof(Head) + sizeof(unsigned long long) * static_cast<size_t>(spec_.hist_bins) +
                    align8(sizeof(float) * static_cast<size_t>(l.grid_rows) * static_cast<size_t>(l.grid_cols));
  std::vector<Outlier> out;
  out.reserve(static_cast<size_t>(h.n_outliers));
  for (long long k = 0; k < h.n_outliers; ++k) {
    Candidate x;
    std::memcpy(&x, rec + at + static_cast<size_t>(k) * sizeof(Candidate), sizeof x);
    out.push_back(Outlier{x.index, x.value, 0.0f});
  }
  return out;
}

BlockScales DeviceSummaries::read_scales(int slot, size_t i) const {
  const unsigned char* rec = record(slot, i);
  Head h;
  std::memcpy(&h, rec, sizeof h);
  BlockScales s;
  s.block_size = layout_[i].scale_block;
  s.blocks = h.blocks;
  if (h.blocks > 0) {
    s.min = h.d_min;
    s.max = h.d_max;
    s.mean = h.d_sum / static_cast<double>(h.blocks);
  }
  return s;
}

}  // namespace minfer::cuda
