#include <cmath>

#include "cpu/ops.h"

namespace minfer::cpu {

void add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void add_bias(const float* x, const float* bias, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] + bias[c];
}

static inline float silu1(float v) { return v / (1.0f + std::exp(-v)); }

void silu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = silu1(x[i]);
}

void mul(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void swiglu(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = silu1(gate[i]) * up[i];
}

}  // namespace minfer::cpu
