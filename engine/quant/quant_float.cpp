// F32 / F16 / BF16 "quantization" (element conversions) and their scalar dots against f32.
#include <cstring>

#include "core/fp16.h"
#include "quant/quant_impl.h"

namespace minfer::qimpl {

void dequantize_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void dequantize_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}
void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(b[i]);
}

void quantize_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}
void quantize_bf16(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) b[i] = f32_to_bf16(src[i]);
}

namespace scalar {
// Four partial sums: keeps the rounding behaviour close to the SIMD paths' lane sums.
template <class Load>
static float dot_lanes(int64_t n, const float* a, Load load) {
  float s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) s[l] += load(i + l) * a[i + l];
  for (; i < n; ++i) s[0] += load(i) * a[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}
float dot_f32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const float*>(w);
  return dot_lanes(n, static_cast<const float*>(a), [x](int64_t i) { return x[i]; });
}
float dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  return dot_lanes(n, static_cast<const float*>(a), [x](int64_t i) { return fp16_to_f32(x[i]); });
}
float dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  return dot_lanes(n, static_cast<const float*>(a), [x](int64_t i) { return bf16_to_f32(x[i]); });
}
}  // namespace scalar

}  // namespace minfer::qimpl
