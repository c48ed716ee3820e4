// The 256-element K-quants: Q4_K, Q5_K, Q6_K and the Q8_K activation format.
// Reference quantizers: per sub-block a least-squares scale (and min) chosen among a few
// candidate grids, then the sub-block scales themselves quantized to 6 (Q4_K/Q5_K) or 8 (Q6_K)
// bits under one f16 super-block scale, and the codes recomputed against the stored scales.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_impl.h"

namespace minfer::qimpl {
namespace {

int clamp_round(float v, int lo, int hi) { return round_clamp(v, lo, hi); }

// Fits x[j] ~= scale * L[j] - min with L in [0, nmax], min >= 0 (the K-quant convention).
void fit_affine(const float* x, int n, int nmax, float* scale_out, float* min_out) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  lo = std::min(lo, 0.0f);  // the offset only ever subtracts
  if (hi <= lo) {
    *scale_out = 0;
    *min_out = -lo;
    return;
  }
  double sx = 0, sx2 = 0;
  for (int j = 0; j < n; ++j) {
    sx += x[j];
    sx2 += double(x[j]) * x[j];
  }
  float best_err = INFINITY, best_scale = (hi - lo) / nmax, best_off = lo;
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (nmax + 0.1f * step) / (hi - lo);
    int sl = 0, sl2 = 0;
    float sxl = 0;
    for (int j = 0; j < n; ++j) {
      const int L = clamp_round((x[j] - lo) * iscale, 0, nmax);
      sl += L;
      sl2 += L * L;
      sxl += x[j] * L;
    }
    const double det = double(n) * sl2 - double(sl) * sl;
    if (det <= 0) continue;
    double scale = (n * double(sxl) - sl * sx) / det;
    double off = (sl2 * sx - sl * double(sxl)) / det;
    if (off > 0) {  // a positive offset is not representable: refit the scale alone
      off = 0;
      scale = sxl / sl2;
    }
    // sum (scale L + off - x)^2 from the sums, no second pass.
    const double err = scale * scale * sl2 + 2 * scale * off * sl + n * off * off - 2 * scale * sxl -
                       2 * off * sx + sx2;
    if (err < best_err) {
      best_err = static_cast<float>(err);
      best_scale = static_cast<float>(scale);
      best_off = static_cast<float>(off);
    }
  }
  *scale_out = best_scale;
  *min_out = -best_off;
}

// Fits x[j] ~= scale * L[j] with L in [-nmax, nmax-1]; the scale's sign follows the largest
// magnitude so that value can use the wider negative end.
float fit_symmetric(const float* x, int n, int nmax) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  if (amax == 0) return 0;
  float best_err = INFINITY, best_scale = max / -nmax;
  double sx2 = 0;
  for (int j = 0; j < n; ++j) sx2 += double(x[j]) * x[j];
  for (int step = -9; step <= 9; ++step) {
    const float iscale = -(nmax + 0.1f * step) / max;
    float sxl = 0;
    int sl2 = 0;
    for (int j = 0; j < n; ++j) {
      const int L = clamp_round(x[j] * iscale, -nmax, nmax - 1);
      sxl += x[j] * L;
      sl2 += L * L;
    }
    if (sl2 <= 0) continue;
    const double scale = double(sxl) / sl2;
    const double err = sx2 - scale * sxl;  // sum (scale L - x)^2 at the least-squares scale
    if (err < best_err) {
      best_err = static_cast<float>(err);
      best_scale = static_cast<float>(scale);
    }
  }
  return best_scale;
}

// Shared by Q4_K and Q5_K: codes L[256] in [0, nmax] plus packed scales, d and dmin.
void quantize_affine_superblock(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out,
                                uint8_t packed[K_SCALE_BYTES], uint8_t L[QK_K]) {
  float scales[8], mins[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    fit_affine(x + 32 * j, 32, nmax, &scales[j], &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(clamp_round(inv_scale * scales[j], 0, 63));
    mn[j] = static_cast<uint8_t>(clamp_round(inv_min * mins[j], 0, 63));
  }
  pack_scale_min_k4(sc, mn, packed);
  *d_out = f32_to_fp16(max_scale / 63.0f);
  *dmin_out = f32_to_fp16(max_min / 63.0f);
  const float d = fp16_to_f32(*d_out), dmin = fp16_to_f32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * sc[j], ml = dmin * mn[j];
    for (int l = 0; l < 32; ++l)
      L[32 * j + l] = dl > 0 ? static_cast<uint8_t>(clamp_round((x[32 * j + l] + ml) / dl, 0, nmax)) : 0;
  }
}

}  // namespace

void dequantize_q4_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int g = 0; g < 4; ++g, q += 32) {  // 64 elements: sub-blocks 2g (low) and 2g+1 (high)
      uint8_t sc, m;
      get_scale_min_k4(2 * g, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(2 * g + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}
void dequantize_q5_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int g = 0; g < 4; ++g, ql += 32) {
      uint8_t sc, m;
      get_scale_min_k4(2 * g, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(2 * g + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      const uint8_t u1 = static_cast<uint8_t>(1u << (2 * g)), u2 = static_cast<uint8_t>(2u << (2 * g));
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
  }
}
void dequantize_q6_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}
void dequantize_q8_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K)
    for (int j = 0; j < QK_K; ++j) y[j] = b[i].d * b[i].qs[j];
}

void quantize_q4_k(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    uint8_t L[QK_K];
    quantize_affine_superblock(x, 15, &b[i].d, &b[i].dmin, b[i].scales, L);
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l)
        b[i].qs[32 * g + l] = static_cast<uint8_t>(L[64 * g + l] | (L[64 * g + 32 + l] << 4));
  }
}
void quantize_q5_k(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    uint8_t L[QK_K];
    quantize_affine_superblock(x, 31, &b[i].d, &b[i].dmin, b[i].scales, L);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * g + l], hi = L[64 * g + 32 + l];
        b[i].qs[32 * g + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        b[i].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
      }
  }
}
void quantize_q6_k(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float scales[16], max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric(x + 16 * j, 16, 32);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    // Signed int8 sub-scales; the largest lands on -128 (or 127 when clipped).
    const float iscale = max_scale != 0 ? -128.0f / max_scale : 0.0f;
    b[i].d = f32_to_fp16(iscale != 0 ? 1.0f / iscale : 0.0f);
    const float d = fp16_to_f32(b[i].d);
    uint8_t L[QK_K];
    for (int j = 0; j < 16; ++j) {
      b[i].scales[j] = static_cast<int8_t>(clamp_round(iscale * scales[j], -128, 127));
      const float dl = d * b[i].scales[j];
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<uint8_t>(dl != 0 ? clamp_round(x[16 * j + l] / dl, -32, 31) + 32 : 32);
    }
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = L + 128 * half;
      uint8_t* ql = b[i].ql + 64 * half;
      uint8_t* qh = b[i].qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        const int q1 = q[l], q2 = q[l + 32], q3 = q[l + 64], q4 = q[l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}
void quantize_q8_k(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float amax = 0;
    for (int j = 0; j < QK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax > 0 ? 127.0f / amax : 0.0f;
    b[i].d = amax / 127.0f;
    for (int j = 0; j < QK_K; ++j) b[i].qs[j] = static_cast<int8_t>(clamp_round(x[j] * id, -127, 127));
    for (int s = 0; s < QK_K / 16; ++s) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * s + l];
      b[i].bsums[s] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace minfer::qimpl
