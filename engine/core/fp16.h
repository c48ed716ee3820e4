// IEEE half and bfloat16 <-> float conversions (portable; compilers lower them to F16C where present).
#pragma once
#include <cstdint>
#include <bit>
#include <cstring>

namespace minfer {

inline float fp16_to_f32(uint16_t h) {
  return static_cast<float>(std::bit_cast<_Float16>(h));
}
inline uint16_t f32_to_fp16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Round to nearest even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 64);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace minfer
