// CPU implementation of a node summary (what the recorder stores per node and step): statistics
// over the finite values, a strided value grid and a histogram over the tensor's own range.
// The CUDA backend computes the same summary on the device; both follow the rules below.
#pragma once
#include <cstdint>

#include "exec/observer.h"

namespace minfer {

// data: rows*cols floats, row-major (token-major activations).
// - stats: min/max/mean/absmean/std (population) over the finite values; count = rows*cols;
//   nan / inf count the rest. No finite value: min..std are NaN (the trace writes null).
// - grid (spec.grid_rows > 0 and spec.grid_cols > 0): row_stride = ceil(rows / grid_rows),
//   grid rows = ceil(rows / row_stride), the same for columns; cell (r, c) is the element at
//   (r*row_stride, c*col_stride), copied as is (NaN/Inf included).
// - hist (spec.hist_bins > 0): bins span [lo, hi] = finite [min, max]; a finite x lands in bin
//   floor((x - lo) / (hi - lo) * bins) clamped to the last bin (all in bin 0 when hi == lo);
//   -Inf counts as underflow, +Inf as overflow, NaN in no bin.
// spec.stats == false skips the statistics unless the histogram needs the range.
TensorSummary summarize_host(const float* data, int64_t rows, int64_t cols, const SummarySpec& spec);

// ceil(n / cap) for the grid strides (1 when n <= cap); exposed for tests and device code.
int64_t grid_stride(int64_t n, int cap);

}  // namespace minfer
