#include <cmath>

#include "cpu/ops.h"

namespace minfer::cpu {

void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps,
              ThreadPool& pool) {
  pool.parallel_for(rows, 4, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      double ss = 0;  // double: a +30 outlier channel must not swamp the sum's precision
      for (int64_t c = 0; c < cols; ++c) ss += static_cast<double>(xr[c]) * xr[c];
      const float scale = static_cast<float>(1.0 / std::sqrt(ss / cols + eps));
      for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * scale * w[c];
    }
  });
}

// Heads are contiguous runs of head_dim values: one rms_norm row per head.
void head_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
                   float eps, ThreadPool& pool) {
  rms_norm(x, w, y, rows * n_heads, head_dim, eps, pool);
}

}  // namespace minfer::cpu
