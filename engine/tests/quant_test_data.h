// Test data and references shared by the tests of the quantized kernel families (dequant,
// get_rows, mmvq, mmq, the fused matvecs) and by minfer-kernel-bench: random inputs (never zeros),
// random weights of every type, and the exact float64 reference of what an int8 dot against Q8_1
// activations computes. Plain C++ (no GoogleTest, no CUDA), so a tool can include it.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/weight_type.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace minfer::testing {

// n floats from N(0, scale^2) with a few planted outliers (real activations have them).
inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  for (size_t i = 0; i < n; i += 997) v[i] *= 8.0f;
  return v;
}

inline const WeightType kAllWeightTypes[] = {WeightType::F32,  WeightType::F16,  WeightType::BF16, WeightType::Q4_0,
                                             WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1, WeightType::Q8_0,
                                             WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K};
inline const WeightType kQuantTypes[] = {WeightType::Q4_0, WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1,
                                         WeightType::Q8_0, WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K};

// How the test weights are made: random bytes in every code/scale field (every bit pattern of
// the packed formats is exercised) with sane f16 scales, or the reference quantizer's output of
// random floats (what real files hold).
enum class WeightSource { RandomBytes, Quantized };
inline const char* source_name(WeightSource s) { return s == WeightSource::RandomBytes ? "bytes" : "quantized"; }

// A random f16 scale with magnitude in [0.5, 1.5] * scale, of random sign when `signed_`.
inline uint16_t random_scale(std::mt19937& rng, float scale, bool signed_) {
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  float v = u(rng) * scale;
  if (signed_ && (rng() & 1)) v = -v;
  return f32_to_fp16(v);
}
inline void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// rows x cols weights of type t, row-major, row_bytes(t, cols) per row.
inline std::vector<uint8_t> random_weights(WeightType t, int64_t rows, int64_t cols, uint32_t seed,
                                           WeightSource src = WeightSource::RandomBytes) {
  const size_t rb = row_bytes(t, cols);
  std::vector<uint8_t> w(rb * static_cast<size_t>(rows));
  if (!is_quantized(t) || src == WeightSource::Quantized) {
    const auto f = random_floats(static_cast<size_t>(rows * cols), seed, 0.05f);
    for (int64_t r = 0; r < rows; ++r) quantize_row(t, f.data() + r * cols, w.data() + r * rb, cols);
    return w;
  }
  std::mt19937 rng(seed);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  const auto& ti = info(t);
  const size_t n_blocks = w.size() / ti.block_bytes;
  for (size_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = w.data() + i * ti.block_bytes;
    switch (t) {
      case WeightType::Q4_0: put16(b, random_scale(rng, 0.02f, true)); break;
      case WeightType::Q5_0: put16(b, random_scale(rng, 0.01f, true)); break;
      case WeightType::Q8_0: put16(b, random_scale(rng, 0.001f, true)); break;
      case WeightType::Q4_1:
      case WeightType::Q5_1:
        put16(b, random_scale(rng, 0.005f, true));
        put16(b + 2, random_scale(rng, 0.05f, true));
        break;
      case WeightType::Q4_K:
      case WeightType::Q5_K:
        put16(b, random_scale(rng, 0.0005f, false));
        put16(b + 2, random_scale(rng, 0.001f, false));
        break;
      case WeightType::Q6_K: put16(b + offsetof(BlockQ6_K, d), random_scale(rng, 0.0002f, true)); break;
      default: break;
    }
  }
  return w;
}

inline std::vector<float> dequantize_rows(WeightType t, const std::vector<uint8_t>& w, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const size_t rb = row_bytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) dequantize_row(t, w.data() + r * rb, out.data() + r * cols, cols);
  return out;
}

// The additive offset of each 32-element block of one weight row (value = d*q + offset):
// m for Q4_1/Q5_1, -dmin*m_j for Q4_K/Q5_K, 0 for the symmetric types.
inline std::vector<double> block_offsets(WeightType t, const uint8_t* row, int64_t n) {
  std::vector<double> off(static_cast<size_t>(n / QK), 0.0);
  for (int64_t b = 0; b < n / QK; ++b) {
    if (t == WeightType::Q4_1) off[b] = fp16_to_f32(reinterpret_cast<const BlockQ4_1*>(row)[b].m);
    if (t == WeightType::Q5_1) off[b] = fp16_to_f32(reinterpret_cast<const BlockQ5_1*>(row)[b].m);
    if (t == WeightType::Q4_K || t == WeightType::Q5_K) {
      const size_t bytes = t == WeightType::Q4_K ? sizeof(BlockQ4_K) : sizeof(BlockQ5_K);
      const uint8_t* sb = row + (b / 8) * bytes;  // d, dmin, scales: same offsets in both
      uint16_t dmin;
      std::memcpy(&dmin, sb + 2, 2);
      uint8_t sc, m;
      get_scale_min_k4(static_cast<int>(b % 8), sb + 4, &sc, &m);
      off[b] = -static_cast<double>(fp16_to_f32(dmin)) * m;
    }
  }
  return off;
}

// Host Q8_1 quantization of [nt][n] f32 (the CPU twin of quantize_q8_1).
inline std::vector<uint8_t> quantize_q8_1_host(const std::vector<float>& x, int64_t nt, int64_t n) {
  const size_t rb = row_bytes(WeightType::Q8_1, n);
  std::vector<uint8_t> q(rb * static_cast<size_t>(nt));
  for (int64_t t = 0; t < nt; ++t) quantize_row(WeightType::Q8_1, x.data() + t * n, q.data() + t * rb, n);
  return q;
}

// What an int8 MMQ/MMVQ computes, exactly, in float64, from the same weight and Q8_1 bytes:
//   y[t][o] = bias[o] + sum_k W[o][k] A[t][k] + sum_b off[o][b] * (s[t][b] - sum_{k in b} A[t][k])
// W = dequantize_row(weights), A = dequantize_row(Q8_1) = d_a * q_a; the last term swaps the
// exact activation block sum for the stored f16 s = d_a * sum(q_a) where the kernels use it
// (offset types only). mag[t][o] = sum of |terms|, the scale of float rounding.
struct Q8Reference {
  std::vector<double> y, mag;
};
inline Q8Reference q8_1_reference(WeightType t, const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in,
                                  const std::vector<uint8_t>& xq, int64_t nt, const float* bias) {
  const auto wd = dequantize_rows(t, w, n_out, n_in);
  const auto ad = dequantize_rows(WeightType::Q8_1, xq, nt, n_in);
  const size_t wrb = row_bytes(t, n_in), xrb = row_bytes(WeightType::Q8_1, n_in);
  const int64_t nb = n_in / QK;
  std::vector<double> s(static_cast<size_t>(nt * nb)), asum(s.size(), 0.0), aabs(s.size(), 0.0);
  for (int64_t tk = 0; tk < nt; ++tk)
    for (int64_t b = 0; b < nb; ++b) {
      s[tk * nb + b] = fp16_to_f32(reinterpret_cast<const BlockQ8_1*>(xq.data() + tk * xrb)[b].s);
      for (int k = 0; k < QK; ++k) {
        asum[tk * nb + b] += ad[tk * n_in + b * QK + k];
        aabs[tk * nb + b] += std::fabs(ad[tk * n_in + b * QK + k]);
      }
    }
  Q8Reference r;
  r.y.assign(static_cast<size_t>(nt * n_out), 0.0);
  r.mag.assign(r.y.size(), 0.0);
  for (int64_t o = 0; o < n_out; ++o) {
    const auto off = block_offsets(t, w.data() + o * wrb, n_in);
    for (int64_t tk = 0; tk < nt; ++tk) {
      double acc = bias ? bias[o] : 0.0, mag = bias ? std::fabs(bias[o]) : 0.0;
      const float* wr = wd.data() + o * n_in;
      const float* ar = ad.data() + tk * n_in;
      for (int64_t k = 0; k < n_in; ++k) {
        const double p = static_cast<double>(wr[k]) * ar[k];
        acc += p;
        mag += std::fabs(p);
      }
      for (int64_t b = 0; b < nb; ++b) {
        const double ob = off[b];
        if (ob == 0.0) continue;
        acc += ob * (s[tk * nb + b] - asum[tk * nb + b]);
        mag += std::fabs(ob) * (std::fabs(s[tk * nb + b]) + aabs[tk * nb + b]);
      }
      r.y[tk * n_out + o] = acc;
      r.mag[tk * n_out + o] = mag;
    }
  }
  return r;
}

// sum_k |W[o][k] x[t][k]| (+|bias|) in float64: the scale for comparisons against the CPU.
inline std::vector<double> abs_products(const std::vector<float>& wd, const std::vector<float>& x, int64_t n_out,
                                        int64_t n_in, int64_t nt, const float* bias) {
  std::vector<double> m(static_cast<size_t>(nt * n_out), 0.0);
  for (int64_t tk = 0; tk < nt; ++tk)
    for (int64_t o = 0; o < n_out; ++o) {
      double s = bias ? std::fabs(bias[o]) : 0.0;
      for (int64_t k = 0; k < n_in; ++k) s += std::fabs(static_cast<double>(wd[o * n_in + k]) * x[tk * n_in + k]);
      m[tk * n_out + o] = s;
    }
  return m;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }
inline std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace minfer::testing
