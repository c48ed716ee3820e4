#include <cmath>
#include <vector>

#include "cpu/ops.h"

namespace minfer::cpu {
namespace {

// Rotates, in every head of every row, the pairs pair_of(i) = (a, b) by pos * inv_freq[i].
template <typename PairOf>
void rope(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads, int64_t head_dim,
          double base, const float* freq_divisors, ThreadPool& pool, PairOf pair_of) {
  const int64_t half = head_dim / 2;
  // inv_freq[i] = base^(-2i/d), as HF computes it; Llama 3.1 scaling divides it by rope_freqs[i].
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[static_cast<size_t>(i)] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    if (freq_divisors) inv_freq[static_cast<size_t>(i)] /= static_cast<double>(freq_divisors[i]);
  }
  const int64_t cols = n_heads * head_dim;
  pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos[r]) * inv_freq[static_cast<size_t>(i)];
        cs[static_cast<size_t>(i)] = static_cast<float>(std::cos(a));
        sn[static_cast<size_t>(i)] = static_cast<float>(std::sin(a));
      }
      for (int64_t h = 0; h < n_heads; ++h) {
        const float* xh = x + r * cols + h * head_dim;
        float* yh = y + r * cols + h * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const auto [ia, ib] = pair_of(i, half);
          const float x0 = xh[ia], x1 = xh[ib];
          yh[ia] = x0 * cs[static_cast<size_t>(i)] - x1 * sn[static_cast<size_t>(i)];
          yh[ib] = x0 * sn[static_cast<size_t>(i)] + x1 * cs[static_cast<size_t>(i)];
        }
      }
    }
  });
}

struct Pair {
  int64_t a, b;
};

}  // namespace

void rope_neox(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads,
               int64_t head_dim, double base, ThreadPool& pool, const float* freq_divisors) {
  rope(x, pos, y, rows, n_heads, head_dim, base, freq_divisors, pool, [](int64_t i, int64_t half) {
    return Pair{i, i + half};
  });
}

void rope_normal(const float* x, const int32_t* pos, float* y, int64_t rows, int64_t n_heads,
                 int64_t head_dim, double base, ThreadPool& pool, const float* freq_divisors) {
  rope(x, pos, y, rows, n_heads, head_dim, base, freq_divisors, pool, [](int64_t i, int64_t) {
    return Pair{2 * i, 2 * i + 1};
  });
}

}  // namespace minfer::cpu
