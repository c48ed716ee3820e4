// Embedding lookup on the GPU for every weight type: y[i][:] = row ids[i] of w, as f32.
// CPU twin: cpu::get_rows (cpu/ops.h). Test: engine/tests/test_cuda_get_rows.cpp.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/weight_type.h"

namespace minfer::cuda {

// w: [n_rows][n_cols] in type t (16-byte aligned); ids: n_ids DEVICE int32; y: [n_ids][n_cols] f32.
// The host validates ids beforehand; an id outside [0, n_rows) still never reads out of bounds:
// its output row is filled with NaN. Graph-capturable (ids are read on the device).
void get_rows(WeightType t, const void* w, int64_t n_rows, int64_t n_cols, const int32_t* ids, int64_t n_ids,
              float* y, cudaStream_t s);

}  // namespace minfer::cuda
