// The 32-element block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and the Q8_1 activation format.
// Reference quantizers follow ggml's conventions, so files written here round-trip the same
// way through other GGUF tools.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_impl.h"

namespace minfer::qimpl {
namespace {

uint32_t load_qh(const uint8_t qh[4]) {
  uint32_t v;
  std::memcpy(&v, qh, 4);  // little-endian, as ggml stores it
  return v;
}
void store_qh(uint8_t qh[4], uint32_t v) { std::memcpy(qh, &v, 4); }

// Signed value of largest magnitude (its sign picks the scale's sign for Q4_0/Q5_0).
float signed_absmax(const float* x, int n) {
  float amax = 0, m = 0;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      m = x[j];
    }
  return m;
}

// Symmetric: d = max/-half, q = x/d + half in [0, 2*half-1]. The most negative code sits on the
// side of the largest magnitude, so that value is exact; the opposite extreme clips by <= d.
template <int Half>
void quantize_symmetric(const float* x, uint16_t* d_out, uint8_t* q) {
  const float max = signed_absmax(x, QK);
  const float d = max / -Half;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  *d_out = f32_to_fp16(d);
  for (int j = 0; j < QK; ++j) q[j] = static_cast<uint8_t>(
      std::min(2 * Half - 1, static_cast<int>(x[j] * id + (Half + 0.5f))));
}
// Asymmetric: value = d*q + m with m = block min, q in [0, levels-1].
template <int Levels>
void quantize_affine(const float* x, uint16_t* d_out, uint16_t* m_out, uint8_t* q) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < QK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float d = (hi - lo) / (Levels - 1);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  *d_out = f32_to_fp16(d);
  *m_out = f32_to_fp16(lo);
  for (int j = 0; j < QK; ++j)
    q[j] = static_cast<uint8_t>(std::min(Levels - 1, static_cast<int>((x[j] - lo) * id + 0.5f)));
}

void pack_nibbles(const uint8_t q[QK], uint8_t qs[QK / 2]) {
  for (int j = 0; j < QK / 2; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
}
uint32_t fifth_bits(const uint8_t q[QK]) {
  uint32_t h = 0;
  for (int j = 0; j < QK; ++j) h |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  return h;
}

// Q8_0 / Q8_1 share the int8 step: d = amax/127, q = round(x/d).
float quantize_int8(const float* x, int8_t* q) {
  float amax = 0;
  for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < QK; ++j) q[j] = static_cast<int8_t>(round_clamp(x[j] * id, -127, 127));
  return d;
}

}  // namespace

void dequantize_q4_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < QK / 2; ++j) {
      y[j] = d * ((b[i].qs[j] & 0xF) - 8);
      y[j + 16] = d * ((b[i].qs[j] >> 4) - 8);
    }
  }
}
void dequantize_q4_1(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    for (int j = 0; j < QK / 2; ++j) {
      y[j] = d * (b[i].qs[j] & 0xF) + m;
      y[j + 16] = d * (b[i].qs[j] >> 4) + m;
    }
  }
}
void dequantize_q5_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = fp16_to_f32(b[i].d);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < QK / 2; ++j) {
      const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = d * (((b[i].qs[j] & 0xF) | h0) - 16);
      y[j + 16] = d * (((b[i].qs[j] >> 4) | h1) - 16);
    }
  }
}
void dequantize_q5_1(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < QK / 2; ++j) {
      const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = d * ((b[i].qs[j] & 0xF) | h0) + m;
      y[j + 16] = d * ((b[i].qs[j] >> 4) | h1) + m;
    }
  }
}
void dequantize_q8_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < QK; ++j) y[j] = d * b[i].qs[j];
  }
}
void dequantize_q8_1(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / QK; ++i, y += QK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < QK; ++j) y[j] = d * b[i].qs[j];
  }
}

void quantize_q4_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / QK; ++i, x += QK) {
    uint8_t q[QK];
    quantize_symmetric<8>(x, &b[i].d, q);
    pack_nibbles(q, b[i].qs);
  }
}
void quantize_q4_1(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / QK; ++i, x += QK) {
    uint8_t q[QK];
    quantize_affine<16>(x, &b[i].d, &b[i].m, q);
    pack_nibbles(q, b[i].qs);
  }
}
void quantize_q5_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / QK; ++i, x += QK) {
    uint8_t q[QK];
    quantize_symmetric<16>(x, &b[i].d, q);
    pack_nibbles(q, b[i].qs);
    store_qh(b[i].qh, fifth_bits(q));
  }
}
void quantize_q5_1(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / QK; ++i, x += QK) {
    uint8_t q[QK];
    quantize_affine<32>(x, &b[i].d, &b[i].m, q);
    pack_nibbles(q, b[i].qs);
    store_qh(b[i].qh, fifth_bits(q));
  }
}
void quantize_q8_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / QK; ++i, x += QK) b[i].d = f32_to_fp16(quantize_int8(x, b[i].qs));
}
void quantize_q8_1(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / QK; ++i, x += QK) {
    const float d = quantize_int8(x, b[i].qs);
    int sum = 0;
    for (int j = 0; j < QK; ++j) sum += b[i].qs[j];
    // s from the stored (f16) d, so m * s matches the dequantized activations as closely as f16 allows.
    b[i].d = f32_to_fp16(d);
    b[i].s = f32_to_fp16(fp16_to_f32(b[i].d) * static_cast<float>(sum));
  }
}

}  // namespace minfer::qimpl
