// Portable dot products of quantized weight rows with quantized activation rows: integer
// products inside each block, one float multiply-add per block (or sub-block). These are the
// reference the SIMD paths are tested against, and the fallback on CPUs without them.
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_impl.h"

namespace minfer::qimpl::scalar {
namespace {

uint32_t load_qh(const uint8_t qh[4]) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}
// sum_j q(j) * a[j] over one 32-block whose 4-bit codes are nibbles (plus an optional 5th bit).
int nibble_dot(const uint8_t* qs, uint32_t qh, const int8_t* a, int offset) {
  int sum = 0;
  for (int j = 0; j < QK / 2; ++j) {
    const int q0 = ((qs[j] & 0xF) | (((qh >> j) & 1) << 4)) - offset;
    const int q1 = ((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - offset;
    sum += q0 * a[j] + q1 * a[j + 16];
  }
  return sum;
}

}  // namespace

float dot_q4_0(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  float sum = 0;
  for (int64_t i = 0; i < n / QK; ++i)
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * nibble_dot(x[i].qs, 0, y[i].qs, 8);
  return sum;
}
float dot_q4_1(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(act);
  float sum = 0;
  for (int64_t i = 0; i < n / QK; ++i)  // sum (d q + m) a = d da sum(q qa) + m * s
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * nibble_dot(x[i].qs, 0, y[i].qs, 0) +
           fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
  return sum;
}
float dot_q5_0(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  float sum = 0;
  for (int64_t i = 0; i < n / QK; ++i)
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) *
           nibble_dot(x[i].qs, load_qh(x[i].qh), y[i].qs, 16);
  return sum;
}
float dot_q5_1(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(act);
  float sum = 0;
  for (int64_t i = 0; i < n / QK; ++i)
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) *
               nibble_dot(x[i].qs, load_qh(x[i].qh), y[i].qs, 0) +
           fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
  return sum;
}
float dot_q8_0(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(act);
  float sum = 0;
  for (int64_t i = 0; i < n / QK; ++i) {
    int s = 0;
    for (int j = 0; j < QK; ++j) s += x[i].qs[j] * y[i].qs[j];
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * s;
  }
  return sum;
}

// Q4_K / Q5_K: value = d sc_j q - dmin m_j, so a block's dot is
// d da sum_j sc_j (q . a)_j  -  dmin da sum_j m_j (sum a)_j, the latter from Q8_K's bsums.
template <bool kFifthBit, class Block>
static float dot_affine_k(int64_t n, const Block* x, const BlockQ8_K* y) {
  float sum = 0;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const uint8_t* q = x[i].qs;
    const int8_t* a = y[i].qs;
    int32_t dot_sc = 0, dot_min = 0;
    for (int g = 0; g < 4; ++g, q += 32, a += 64) {
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * g + h;
        uint8_t sc, m;
        get_scale_min_k4(j, x[i].scales, &sc, &m);
        int s = 0;
        for (int l = 0; l < 32; ++l) {
          int v = h ? (q[l] >> 4) : (q[l] & 0xF);
          if constexpr (kFifthBit) v |= ((x[i].qh[l] >> j) & 1) << 4;
          s += v * a[32 * h + l];
        }
        dot_sc += sc * s;
        dot_min += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
      }
    }
    sum += y[i].d * (fp16_to_f32(x[i].d) * dot_sc - fp16_to_f32(x[i].dmin) * dot_min);
  }
  return sum;
}
float dot_q4_k(int64_t n, const void* w, const void* act) {
  return dot_affine_k<false>(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(act));
}
float dot_q5_k(int64_t n, const void* w, const void* act) {
  return dot_affine_k<true>(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(act));
}

float dot_q6_k(int64_t n, const void* w, const void* act) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(act);
  float sum = 0;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    int8_t q[QK_K];  // unpack the six-bit codes (minus 32) in element order
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[i].ql + 64 * half;
      const uint8_t* qh = x[i].qh + 32 * half;
      int8_t* o = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        o[l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        o[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        o[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        o[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    int32_t acc = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += q[16 * j + l] * y[i].qs[16 * j + l];
      acc += x[i].scales[j] * s;
    }
    sum += fp16_to_f32(x[i].d) * y[i].d * acc;
  }
  return sum;
}

}  // namespace minfer::qimpl::scalar
