// KV cache write: row r of k and v (this step's keys/values, [rows][n_embd_kv] f32) goes to row
// pos[r] of k_cache/v_cache ([n_ctx][n_embd_kv] f32). pos: DEVICE int32 [rows], read on the
// device, so a captured decode graph writes wherever the live position points. A position
// outside [0, n_ctx) is skipped (never written out of bounds). CPU twin: the CPU backend's
// memcpy into its cache (tested against a host loop). Graph-capturable launcher.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace minfer::cuda {

void kv_store(const float* k, const float* v, const int32_t* pos, int64_t rows, int64_t n_embd_kv, float* k_cache,
              float* v_cache, int64_t n_ctx, cudaStream_t s);

}  // namespace minfer::cuda
