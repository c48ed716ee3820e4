#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/ops.h"

namespace minfer::cpu {

void attention(const float* q, const int32_t* pos, const float* k_cache, const float* v_cache,
               float* out, int64_t rows, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
               ThreadPool& pool) {
  const int64_t q_cols = n_head * head_dim, kv_cols = n_head_kv * head_dim;
  const int64_t group = n_head / n_head_kv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  pool.parallel_for(rows * n_head, 1, [&](int64_t b, int64_t e, int) {
    std::vector<float> score;
    for (int64_t job = b; job < e; ++job) {
      const int64_t r = job / n_head, h = job % n_head, kvh = h / group;
      const int64_t n_keys = static_cast<int64_t>(pos[r]) + 1;  // causal: keys 0..pos
      const float* qh = q + r * q_cols + h * head_dim;
      score.resize(static_cast<size_t>(n_keys));
      float mx = -INFINITY;
      for (int64_t t = 0; t < n_keys; ++t) {
        const float* kt = k_cache + t * kv_cols + kvh * head_dim;
        float s = 0;
        for (int64_t d = 0; d < head_dim; ++d) s += qh[d] * kt[d];
        s *= scale;
        score[static_cast<size_t>(t)] = s;
        mx = std::max(mx, s);
      }
      double sum = 0;
      for (auto& s : score) {
        s = std::exp(s - mx);
        sum += s;
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* oh = out + r * q_cols + h * head_dim;
      std::fill(oh, oh + head_dim, 0.0f);
      for (int64_t t = 0; t < n_keys; ++t) {
        const float p = score[static_cast<size_t>(t)] * inv;
        const float* vt = v_cache + t * kv_cols + kvh * head_dim;
        for (int64_t d = 0; d < head_dim; ++d) oh[d] += p * vt[d];
      }
    }
  });
}

}  // namespace minfer::cpu
