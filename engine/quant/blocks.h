// Block structs of the quantized types, byte-for-byte the GGUF/ggml layouts.
// Halves are stored as raw uint16_t bits (fp16_to_f32 / f32_to_fp16 convert them).
#pragma once
#include <cstdint>

namespace minfer {

constexpr int QK = 32;    // elements per block of the legacy types (Q4_0..Q8_1)
constexpr int QK_K = 256; // elements per super-block of the K-quants
constexpr int K_SCALE_BYTES = 12;  // 8 six-bit scales + 8 six-bit mins, packed

struct BlockQ4_0 {
  uint16_t d;           // scale; value = d * (q - 8)
  uint8_t qs[QK / 2];   // element j: low nibble of qs[j]; element j+16: high nibble
};
struct BlockQ4_1 {
  uint16_t d, m;        // value = d * q + m
  uint8_t qs[QK / 2];
};
struct BlockQ5_0 {
  uint16_t d;           // value = d * (q - 16)
  uint8_t qh[4];        // bit j of the little-endian u32 = 5th bit of element j
  uint8_t qs[QK / 2];   // low 4 bits, as Q4_0
};
struct BlockQ5_1 {
  uint16_t d, m;        // value = d * q + m
  uint8_t qh[4];
  uint8_t qs[QK / 2];
};
struct BlockQ8_0 {
  uint16_t d;           // value = d * q
  int8_t qs[QK];
};
struct BlockQ8_1 {
  uint16_t d;           // value = d * q
  uint16_t s;           // d * sum(q): lets Q4_1/Q5_1 dots fold in their offset m
  int8_t qs[QK];
};

// 8 sub-blocks of 32: value = d * sc[j] * q - dmin * m[j], sc/m six-bit (get_scale_min_k4).
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[K_SCALE_BYTES];
  uint8_t qs[QK_K / 2];  // per 64-element group: 32 bytes, low nibbles first 32, high next 32
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[K_SCALE_BYTES];
  uint8_t qh[QK_K / 8];  // bit 2g / 2g+1 of qh[l]: 5th bit of element l of sub-block 2g / 2g+1
  uint8_t qs[QK_K / 2];
};
// 16 sub-blocks of 16: value = d * scales[j] * (q - 32), q six-bit.
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];  // low 4 bits
  uint8_t qh[QK_K / 4];  // high 2 bits
  int8_t scales[QK_K / 16];
  uint16_t d;
};
// Activation format of the K-quant dots: value = d * q, bsums = sums of each 16 q's.
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Six-bit scale and min of sub-block j (0..7) from a K-quant's 12 packed bytes:
// bytes 0-3 hold sc[0..3] (low 6 bits) and the top 2 bits of sc[4..7]; bytes 4-7 the same for
// the mins; bytes 8-11 the low nibbles of sc[4..7] (low) and m[4..7] (high).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
// Inverse of get_scale_min_k4 for all 8 pairs (each value < 64).
inline void pack_scale_min_k4(const uint8_t sc[8], const uint8_t m[8], uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

}  // namespace minfer
