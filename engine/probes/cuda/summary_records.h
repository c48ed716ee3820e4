// The device summaries' job list and record layout, shared by the kernels and their launches
// (summarize_kernels.cu) and the host planner that lays the records out and reads them back
// (summarize.cpp). Plain C++ (no device code). In an anonymous namespace, as the kernels were:
// both files get the same definitions, and the kernels' names (what CUPTI records in a trace)
// keep their types' names; the two files exchange them only as device bytes.
#pragma once
#include <cstdint>

#include "probes/cuda/summarize.h"

namespace minfer::cuda {
namespace {

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

}  // namespace
}  // namespace minfer::cuda
