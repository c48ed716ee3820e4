// Device-side readers of the GGUF block types, shared by the quantized kernel families
// (dequant, get_rows, mmvq, mmq). The block structs are engine/quant/blocks.h's; this header only
// adds __device__ code. A block is read in one of two forms:
//
//   dequant8<T>(blk, c, v)   the 8 consecutive values [8c, 8c+8) of one block as floats, formed
//                            with the same f32 operations as quant/ dequantize_row (products
//                            and sums rounded separately: __fmul_rn/__fadd_rn forbid FMA
//                            contraction), so GPU and CPU tables agree before any f16 rounding;
//
//   Codes<T>                 the integer form of the dot products (mmvq, mmq). A block is split
//                            into kParts parts of 32 codes = 8 ints of 4 int8 codes each. The
//                            8 ints fall into kGroups groups of consecutive ints; a group lies
//                            inside one 32-element Q8_1 activation block and has one scale pair
//                            (d, m), so that over the group
//                                sum w*a = d * d_a * dp4a(codes, a_codes) + m * s_a
//                            with (d_a, s_a = d_a * sum(a_codes)) the Q8_1 block's halves.
//                            m != 0 only for the types with an offset (Q4_1, Q5_1: m; Q4_K,
//                            Q5_K: -dmin*min) and only on the group that starts its 32-element
//                            block, so each activation block's s_a is counted once. Symmetric
//                            types store signed codes (q - 8, q - 16, q - 32) and need no s_a.
//
// Alignment: the launchers require the weight pointer to be 16-byte aligned (cudaMalloc and the
// lead's 256-byte tensor offsets give that); a row is a whole number of blocks, so a block starts
// at a multiple of its size and its fields are aligned to gcd(block size, 16) plus their offset.
// Loads use the widest width that alignment allows: int4 for Q4_K/Q5_K, int2 for Q5_1's codes,
// 32-bit for Q4_1, 16-bit pairs for the 18/22/34/210-byte blocks (Q4_0, Q5_0, Q8_0, Q6_K).
// Q8_1 activation blocks (36 bytes) are 4-byte aligned.
#pragma once
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "core/weight_type.h"
#include "quant/blocks.h"

namespace minfer::cuda::qb {

// ---------------------------------------------------------------- block traits and raw loads

template <WeightType T> struct BlockOf;
template <> struct BlockOf<WeightType::Q4_0> { using type = BlockQ4_0; static constexpr int kElems = QK; };
template <> struct BlockOf<WeightType::Q4_1> { using type = BlockQ4_1; static constexpr int kElems = QK; };
template <> struct BlockOf<WeightType::Q5_0> { using type = BlockQ5_0; static constexpr int kElems = QK; };
template <> struct BlockOf<WeightType::Q5_1> { using type = BlockQ5_1; static constexpr int kElems = QK; };
template <> struct BlockOf<WeightType::Q8_0> { using type = BlockQ8_0; static constexpr int kElems = QK; };
template <> struct BlockOf<WeightType::Q4_K> { using type = BlockQ4_K; static constexpr int kElems = QK_K; };
template <> struct BlockOf<WeightType::Q5_K> { using type = BlockQ5_K; static constexpr int kElems = QK_K; };
template <> struct BlockOf<WeightType::Q6_K> { using type = BlockQ6_K; static constexpr int kElems = QK_K; };

template <WeightType T> constexpr int kBlockElems = BlockOf<T>::kElems;
template <WeightType T> constexpr int kBlockBytes = static_cast<int>(sizeof(typename BlockOf<T>::type));

// Alignment of a block field at byte `offset` when blocks of `bytes` follow a 16-aligned base.
constexpr int field_align(int bytes, int offset) {
  int a = 16;
  while (a > 1 && (bytes % a != 0 || offset % a != 0)) a /= 2;
  return a;
}
template <WeightType T>
constexpr int align_of_field(size_t offset) { return field_align(kBlockBytes<T>, static_cast<int>(offset)); }
constexpr int min_c(int a, int b) { return a < b ? a : b; }

__device__ __forceinline__ float f16_bits(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float bf16_bits(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

// N little-endian ints from p, which is aligned to Align bytes: int4/int2/int loads where the
// alignment allows, else two 16-bit loads per int.
template <int Align, int N>
__device__ __forceinline__ void load_ints(const uint8_t* p, int (&v)[N]) {
  if constexpr (Align >= 16 && N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) {
      const int4 t = reinterpret_cast<const int4*>(p)[i];
      v[4 * i] = t.x, v[4 * i + 1] = t.y, v[4 * i + 2] = t.z, v[4 * i + 3] = t.w;
    }
  } else if constexpr (Align >= 8 && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const int2 t = reinterpret_cast<const int2*>(p)[i];
      v[2 * i] = t.x, v[2 * i + 1] = t.y;
    }
  } else if constexpr (Align >= 4) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = reinterpret_cast<const int*>(p)[i];
  } else {
    static_assert(Align == 2, "blocks are at least 2-byte aligned");
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = static_cast<int>(h[2 * i] | (static_cast<uint32_t>(h[2 * i + 1]) << 16));
  }
}

// Byte i (0..7) of two ints, as loaded by load_ints<.., 2>.
__device__ __forceinline__ int byte_of(const int (&v)[2], int i) { return (v[i >> 2] >> (8 * (i & 3))) & 0xFF; }

// Four 5th bits (bits 0..3 of b) moved to bit 4 of each byte: 0->4, 1->12, 2->20, 3->28.
__device__ __forceinline__ int spread_fifth_bits(uint32_t b) {
  return static_cast<int>(((b << 4) & 0x00000010u) | ((b << 11) & 0x00001000u) | ((b << 18) & 0x00100000u) |
                          ((b << 25) & 0x10000000u));
}
__device__ __forceinline__ int low_nibbles(int v) { return v & 0x0F0F0F0F; }
__device__ __forceinline__ int high_nibbles(int v) { return (v >> 4) & 0x0F0F0F0F; }
// Per-byte subtraction (two's complement wrap): unsigned codes -> signed codes.
__device__ __forceinline__ int sub_bytes(int v, uint32_t k) { return static_cast<int>(__vsub4(static_cast<uint32_t>(v), k)); }

// Six-bit scale and min of K-quant sub-block j (0..7) from the 12 packed bytes (device twin of
// blocks.h's get_scale_min_k4).
__device__ __forceinline__ void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// ---------------------------------------------------------------- float form: dequant8

template <WeightType T>
__device__ void dequant8(const uint8_t* blk, int chunk, float (&v)[8]);

// Legacy 32-blocks: element j < 16 is the low nibble of qs[j], j >= 16 the high nibble of qs[j-16]
// (Q8_0: byte j). Chunk c covers bytes (8c) & 15 .. +7, nibble (8c >= 16).
template <>
__device__ __forceinline__ void dequant8<WeightType::Q4_0>(const uint8_t* blk, int chunk, float (&v)[8]) {
  constexpr WeightType T = WeightType::Q4_0;
  const auto* b = reinterpret_cast<const BlockQ4_0*>(blk);
  int q[2];
  load_ints<min_c(align_of_field<T>(offsetof(BlockQ4_0, qs)), 8)>(b->qs + ((8 * chunk) & 15), q);
  const int shift = chunk >= 2 ? 4 : 0;
  const float d = f16_bits(b->d);
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = __fmul_rn(d, static_cast<float>(((byte_of(q, i) >> shift) & 0xF) - 8));
}
template <>
__device__ __forceinline__ void dequant8<WeightType::Q4_1>(const uint8_t* blk, int chunk, float (&v)[8]) {
  constexpr WeightType T = WeightType::Q4_1;
  const auto* b = reinterpret_cast<const BlockQ4_1*>(blk);
  int q[2];
  load_ints<min_c(align_of_field<T>(offsetof(BlockQ4_1, qs)), 8)>(b->qs + ((8 * chunk) & 15), q);
  const int shift = chunk >= 2 ? 4 : 0;
  const float d = f16_bits(b->d), m = f16_bits(b->m);
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v[i] = __fadd_rn(__fmul_rn(d, static_cast<float>((byte_of(q, i) >> shift) & 0xF)), m);
}
template <>
__device__ __forceinline__ void dequant8<WeightType::Q5_0>(const uint8_t* blk, int chunk, float (&v)[8]) {
  constexpr WeightType T = WeightType::Q5_0;
  const auto* b = reinterpret_cast<const BlockQ5_0*>(blk);
  int q[2], h[1];
  load_ints<min_c(align_of_field<T>(offsetof(BlockQ5_0, qs)), 8)>(b->qs + ((8 * chunk) & 15), q);
  load_ints<align_of_field<T>(offsetof(BlockQ5_0, qh))>(b->qh, h);
  const int shift = chunk >= 2 ? 4 : 0;
  const float d = f16_bits(b->d);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int hi = ((static_cast<uint32_t>(h[0]) >> (8 * chunk + i)) & 1) << 4;
    v[i] = __fmul_rn(d, static_cast<float>((((byte_of(q, i) >> shift) & 0xF) | hi) - 16));
  }
}
template <>
__device__ __forceinline__ void dequant8<WeightType::Q5_1>(const uint8_t* blk, int chunk, float (&v)[8]) {
  constexpr WeightType T = WeightType::Q5_1;
  const auto* b = reinterpret_cast<const BlockQ5_1*>(blk);
  int q[2], h[1];
  load_ints<min_c(align_of_field<T>(offsetof(BlockQ5_1, qs)), 8)>(b->qs + ((8 * chunk) & 15), q);
  load_ints<align_of_field<T>(offsetof(BlockQ5_1, qh))>(b->qh, h);
  const int shift = chunk >= 2 ? 4 : 0;
  const float d = f16_bits(b->d), m = f16_bits(b->m);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int hi = ((static_cast<uint32_t>(h[0]) >> (8 * chunk + i)) & 1) << 4;
    v[i] = __fadd_rn(__fmul_rn(d, static_cast<float>(((byte_of(q, i) >> shift) & 0xF) | hi)), m);
  }
}
template <>
__device__ __forceinline__ void dequant8<WeightType::Q8_0>(const uint8_t* blk, int chunk, float (&v)[8]) {
  constexpr WeightType T = WeightType::Q8_0;
  const auto* b = reinterpret_cast<const BlockQ8_0*>(blk);
  int q[2];
  load_ints<min_c(align_of_field<T>(offsetof(BlockQ8_0, qs)), 8)>(reinterpret_cast<const uint8_t*>(b->qs) + 8 * chunk, q);
  const float d = f16_bits(b->d);
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = __fmul_rn(d, static_cast<float>(static_cast<int8_t>(byte_of(q, i))));
}

// Q4_K/Q5_K: 4 groups of 64 elements; group g holds sub-block 2g in the low nibbles of
// qs[32g .. 32g+31] and sub-block 2g+1 in the high nibbles; Q5_K's 5th bit of element l of
// sub-block j is bit j of qh[l]. value = (d*sc_j) q - (dmin*m_j).
template <bool kFifthBit, class Block>
__device__ __forceinline__ void dequant8_affine_k(const Block* b, int chunk, float (&v)[8]) {
  const int sub = chunk >> 2;              // sub-block 0..7 (32 elements = 4 chunks)
  const int l0 = (chunk & 3) * 8;          // first element within the sub-block
  const int g = sub >> 1, shift = (sub & 1) * 4;
  int sc, m;
  scale_min_k4(sub, b->scales, sc, m);
  const float d1 = __fmul_rn(f16_bits(b->d), static_cast<float>(sc));
  const float m1 = __fmul_rn(f16_bits(b->dmin), static_cast<float>(m));
  int q[2];
  load_ints<8>(b->qs + 32 * g + l0, q);  // qs is 16-aligned in both types; +l0 keeps 8
  int h[2] = {0, 0};
  if constexpr (kFifthBit) load_ints<8>(b->qh + l0, h);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    int c = (byte_of(q, i) >> shift) & 0xF;
    if constexpr (kFifthBit) c += ((byte_of(h, i) >> sub) & 1) << 4;
    v[i] = __fsub_rn(__fmul_rn(d1, static_cast<float>(c)), m1);
  }
}
static_assert(offsetof(BlockQ4_K, qs) % 16 == 0 && sizeof(BlockQ4_K) % 16 == 0);
static_assert(offsetof(BlockQ5_K, qs) % 16 == 0 && offsetof(BlockQ5_K, qh) % 16 == 0 && sizeof(BlockQ5_K) % 16 == 0);

template <>
__device__ __forceinline__ void dequant8<WeightType::Q4_K>(const uint8_t* blk, int chunk, float (&v)[8]) {
  dequant8_affine_k<false>(reinterpret_cast<const BlockQ4_K*>(blk), chunk, v);
}
template <>
__device__ __forceinline__ void dequant8<WeightType::Q5_K>(const uint8_t* blk, int chunk, float (&v)[8]) {
  dequant8_affine_k<true>(reinterpret_cast<const BlockQ5_K*>(blk), chunk, v);
}

// Q6_K: two halves of 128; in half h, element 32*qr + l (quarter qr, l < 32) has its low 4 bits
// in ql[64h + 32*(qr&1) + l] (low nibble for qr < 2, high nibble otherwise) and its high 2 bits
// at bit 2*qr of qh[32h + l]; scale index 8h + 2*qr + l/16. value = (d*sc) (q - 32).
template <>
__device__ __forceinline__ void dequant8<WeightType::Q6_K>(const uint8_t* blk, int chunk, float (&v)[8]) {
  const auto* b = reinterpret_cast<const BlockQ6_K*>(blk);
  const int half = chunk >> 4, qr = (chunk >> 2) & 3, l0 = (chunk & 3) * 8;
  int lo[2], hi[2];
  load_ints<2>(b->ql + 64 * half + 32 * (qr & 1) + l0, lo);
  load_ints<2>(b->qh + 32 * half + l0, hi);
  const float dl = __fmul_rn(f16_bits(b->d), static_cast<float>(b->scales[8 * half + 2 * qr + l0 / 16]));
  const int shift = (qr >> 1) * 4;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int c = ((byte_of(lo, i) >> shift) & 0xF) | (((byte_of(hi, i) >> (2 * qr)) & 3) << 4);
    v[i] = __fmul_rn(dl, static_cast<float>(c - 32));
  }
}

// ---------------------------------------------------------------- integer form: Codes<T>

// act_block(part, g): the Q8_1 block (relative to the first one under this weight block) that
// group g of `part` meets; act_int(part, g): the first of its 8 ints. scale(): (d, m) of the group.
template <WeightType T> struct Codes;

// Legacy 32-blocks: one part, one group of 8 ints in element order (int i = elements 4i..4i+3):
// ints 0..3 are the low nibbles of qs (elements 0..15), ints 4..7 the high nibbles (16..31).
struct LegacyLayout {
  static constexpr int kParts = 1, kGroups = 1;
  __device__ static int act_block(int, int) { return 0; }
  __device__ static int act_int(int, int) { return 0; }
};

template <> struct Codes<WeightType::Q4_0> : LegacyLayout {
  static constexpr WeightType T = WeightType::Q4_0;
  __device__ static void get(const uint8_t* blk, int, int (&q)[8]) {
    int v[4];
    load_ints<align_of_field<T>(offsetof(BlockQ4_0, qs))>(reinterpret_cast<const BlockQ4_0*>(blk)->qs, v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q[i] = sub_bytes(low_nibbles(v[i]), 0x08080808u);
      q[i + 4] = sub_bytes(high_nibbles(v[i]), 0x08080808u);
    }
  }
  __device__ static float2 scale(const uint8_t* blk, int, int) {
    return make_float2(f16_bits(reinterpret_cast<const BlockQ4_0*>(blk)->d), 0.0f);
  }
};
template <> struct Codes<WeightType::Q4_1> : LegacyLayout {
  static constexpr WeightType T = WeightType::Q4_1;
  __device__ static void get(const uint8_t* blk, int, int (&q)[8]) {
    int v[4];
    load_ints<align_of_field<T>(offsetof(BlockQ4_1, qs))>(reinterpret_cast<const BlockQ4_1*>(blk)->qs, v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q[i] = low_nibbles(v[i]);
      q[i + 4] = high_nibbles(v[i]);
    }
  }
  __device__ static float2 scale(const uint8_t* blk, int, int) {
    const auto* b = reinterpret_cast<const BlockQ4_1*>(blk);
    return make_float2(f16_bits(b->d), f16_bits(b->m));
  }
};
template <> struct Codes<WeightType::Q5_0> : LegacyLayout {
  static constexpr WeightType T = WeightType::Q5_0;
  __device__ static void get(const uint8_t* blk, int, int (&q)[8]) {
    const auto* b = reinterpret_cast<const BlockQ5_0*>(blk);
    int v[4], h[1];
    load_ints<align_of_field<T>(offsetof(BlockQ5_0, qs))>(b->qs, v);
    load_ints<align_of_field<T>(offsetof(BlockQ5_0, qh))>(b->qh, h);
    const uint32_t qh = static_cast<uint32_t>(h[0]);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q[i] = sub_bytes(low_nibbles(v[i]) | spread_fifth_bits(qh >> (4 * i)), 0x10101010u);
      q[i + 4] = sub_bytes(high_nibbles(v[i]) | spread_fifth_bits(qh >> (16 + 4 * i)), 0x10101010u);
    }
  }
  __device__ static float2 scale(const uint8_t* blk, int, int) {
    return make_float2(f16_bits(reinterpret_cast<const BlockQ5_0*>(blk)->d), 0.0f);
  }
};
template <> struct Codes<WeightType::Q5_1> : LegacyLayout {
  static constexpr WeightType T = WeightType::Q5_1;
  __device__ static void get(const uint8_t* blk, int, int (&q)[8]) {
    const auto* b = reinterpret_cast<const BlockQ5_1*>(blk);
    int v[4], h[1];
    load_ints<align_of_field<T>(offsetof(BlockQ5_1, qs))>(b->qs, v);
    load_ints<align_of_field<T>(offsetof(BlockQ5_1, qh))>(b->qh, h);
    const uint32_t qh = static_cast<uint32_t>(h[0]);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q[i] = low_nibbles(v[i]) | spread_fifth_bits(qh >> (4 * i));
      q[i + 4] = high_nibbles(v[i]) | spread_fifth_bits(qh >> (16 + 4 * i));
    }
  }
  __device__ static float2 scale(const uint8_t* blk, int, int) {
    const auto* b = reinterpret_cast<const BlockQ5_1*>(blk);
    return make_float2(f16_bits(b->d), f16_bits(b->m));
  }
};
template <> struct Codes<WeightType::Q8_0> : LegacyLayout {
  static constexpr WeightType T = WeightType::Q8_0;
  __device__ static void get(const uint8_t* blk, int, int (&q)[8]) {
    load_ints<align_of_field<T>(offsetof(BlockQ8_0, qs))>(
        reinterpret_cast<const uint8_t*>(reinterpret_cast<const BlockQ8_0*>(blk)->qs), q);
  }
  __device__ static float2 scale(const uint8_t* blk, int, int) {
    return make_float2(f16_bits(reinterpret_cast<const BlockQ8_0*>(blk)->d), 0.0f);
  }
};

// Q4_K/Q5_K: 8 parts; part p = (group g = p/2, half lh = p%2) reads qs[32g + 16lh .. +15]
// (one int4): its low nibbles are elements 16lh.. of sub-block 2g (group 0, Q8_1 block 2g,
// ints 4lh..), its high nibbles the same elements of sub-block 2g+1 (group 1, block 2g+1).
// Group scale: (d*sc_j, -dmin*m_j), the offset only on lh == 0 (it covers the whole sub-block).
template <bool kFifthBit, class Block>
struct AffineKCodes {
  static constexpr int kParts = 8, kGroups = 2;
  __device__ static int act_block(int part, int grp) { return 2 * (part >> 1) + grp; }
  __device__ static int act_int(int part, int) { return 4 * (part & 1); }
  __device__ static void get(const uint8_t* blk, int part, int (&q)[8]) {
    const auto* b = reinterpret_cast<const Block*>(blk);
    const int g = part >> 1, lh = part & 1;
    int v[4];
    load_ints<16>(b->qs + 32 * g + 16 * lh, v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q[i] = low_nibbles(v[i]);
      q[i + 4] = high_nibbles(v[i]);
    }
    if constexpr (kFifthBit) {
      int h[4];
      load_ints<16>(b->qh + 16 * lh, h);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        q[i] |= ((h[i] >> (2 * g)) & 0x01010101) << 4;
        q[i + 4] |= ((h[i] >> (2 * g + 1)) & 0x01010101) << 4;
      }
    }
  }
  __device__ static float2 scale(const uint8_t* blk, int part, int grp) {
    const auto* b = reinterpret_cast<const Block*>(blk);
    int sc, m;
    scale_min_k4(2 * (part >> 1) + grp, b->scales, sc, m);
    const float mins = (part & 1) ? 0.0f : -(f16_bits(b->dmin) * static_cast<float>(m));
    return make_float2(f16_bits(b->d) * static_cast<float>(sc), mins);
  }
};
template <> struct Codes<WeightType::Q4_K> : AffineKCodes<false, BlockQ4_K> {};
template <> struct Codes<WeightType::Q5_K> : AffineKCodes<true, BlockQ5_K> {};

// Q6_K: 8 parts; part p = (half h = p/4, l0 = 8*(p%4)) takes elements l0..l0+7 of each quarter
// qr of half h: group qr = 2 ints, Q8_1 block 4h + qr, ints l0/4 and l0/4+1; codes q - 32
// (signed), scale d * scales[8h + 2qr + l0/16], no offset.
template <> struct Codes<WeightType::Q6_K> {
  static constexpr int kParts = 8, kGroups = 4;
  __device__ static int act_block(int part, int grp) { return 4 * (part >> 2) + grp; }
  __device__ static int act_int(int part, int) { return 2 * (part & 3); }
  __device__ static void get(const uint8_t* blk, int part, int (&q)[8]) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(blk);
    const int half = part >> 2, l0 = 8 * (part & 3);
    int lo_a[2], lo_b[2], hi[2];
    load_ints<2>(b->ql + 64 * half + l0, lo_a);       // quarters 0 (low nibble) and 2 (high)
    load_ints<2>(b->ql + 64 * half + 32 + l0, lo_b);  // quarters 1 and 3
    load_ints<2>(b->qh + 32 * half + l0, hi);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      q[0 + i] = sub_bytes(low_nibbles(lo_a[i]) | ((hi[i] & 0x03030303) << 4), 0x20202020u);
      q[2 + i] = sub_bytes(low_nibbles(lo_b[i]) | (((hi[i] >> 2) & 0x03030303) << 4), 0x20202020u);
      q[4 + i] = sub_bytes(high_nibbles(lo_a[i]) | (((hi[i] >> 4) & 0x03030303) << 4), 0x20202020u);
      q[6 + i] = sub_bytes(high_nibbles(lo_b[i]) | (((hi[i] >> 6) & 0x03030303) << 4), 0x20202020u);
    }
  }
  __device__ static float2 scale(const uint8_t* blk, int part, int grp) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(blk);
    const int idx = 8 * (part >> 2) + 2 * grp + (part & 3) / 2;  // l0/16 = (part&3)/2
    return make_float2(f16_bits(b->d) * static_cast<float>(b->scales[idx]), 0.0f);
  }
};

// ---------------------------------------------------------------- a quarter of a part

// The streaming decode matvec (mmvq_stream.cu; 32-element block types) splits a part over 4
// lanes: lane j (0..3) takes ints j and j + 4 of the part's 8 (Codes<T>::get's order), so the 4
// lanes of a block read one contiguous run and a warp covers 8 blocks per step. Each reader
// below returns exactly those two ints of Codes<T>::get, loading only the bytes they come from.
template <WeightType T>
__device__ void codes_quarter(const uint8_t* blk, int j, int (&q)[2]);

template <>
__device__ __forceinline__ void codes_quarter<WeightType::Q4_0>(const uint8_t* blk, int j, int (&q)[2]) {
  int v[1];
  load_ints<align_of_field<WeightType::Q4_0>(offsetof(BlockQ4_0, qs))>(reinterpret_cast<const BlockQ4_0*>(blk)->qs + 4 * j, v);
  q[0] = sub_bytes(low_nibbles(v[0]), 0x08080808u);
  q[1] = sub_bytes(high_nibbles(v[0]), 0x08080808u);
}
template <>
__device__ __forceinline__ void codes_quarter<WeightType::Q4_1>(const uint8_t* blk, int j, int (&q)[2]) {
  int v[1];
  load_ints<align_of_field<WeightType::Q4_1>(offsetof(BlockQ4_1, qs))>(reinterpret_cast<const BlockQ4_1*>(blk)->qs + 4 * j, v);
  q[0] = low_nibbles(v[0]);
  q[1] = high_nibbles(v[0]);
}
template <>
__device__ __forceinline__ void codes_quarter<WeightType::Q5_0>(const uint8_t* blk, int j, int (&q)[2]) {
  constexpr WeightType T = WeightType::Q5_0;
  const auto* b = reinterpret_cast<const BlockQ5_0*>(blk);
  int v[1], h[1];
  load_ints<align_of_field<T>(offsetof(BlockQ5_0, qs))>(b->qs + 4 * j, v);
  load_ints<align_of_field<T>(offsetof(BlockQ5_0, qh))>(b->qh, h);
  const uint32_t qh = static_cast<uint32_t>(h[0]);
  q[0] = sub_bytes(low_nibbles(v[0]) | spread_fifth_bits(qh >> (4 * j)), 0x10101010u);
  q[1] = sub_bytes(high_nibbles(v[0]) | spread_fifth_bits(qh >> (16 + 4 * j)), 0x10101010u);
}
template <>
__device__ __forceinline__ void codes_quarter<WeightType::Q5_1>(const uint8_t* blk, int j, int (&q)[2]) {
  constexpr WeightType T = WeightType::Q5_1;
  const auto* b = reinterpret_cast<const BlockQ5_1*>(blk);
  int v[1], h[1];
  load_ints<align_of_field<T>(offsetof(BlockQ5_1, qs))>(b->qs + 4 * j, v);
  load_ints<align_of_field<T>(offsetof(BlockQ5_1, qh))>(b->qh, h);
  const uint32_t qh = static_cast<uint32_t>(h[0]);
  q[0] = low_nibbles(v[0]) | spread_fifth_bits(qh >> (4 * j));
  q[1] = high_nibbles(v[0]) | spread_fifth_bits(qh >> (16 + 4 * j));
}
template <>
__device__ __forceinline__ void codes_quarter<WeightType::Q8_0>(const uint8_t* blk, int j, int (&q)[2]) {
  constexpr int kAlign = align_of_field<WeightType::Q8_0>(offsetof(BlockQ8_0, qs));
  const uint8_t* qs = reinterpret_cast<const uint8_t*>(reinterpret_cast<const BlockQ8_0*>(blk)->qs);
  int a[1], b[1];
  load_ints<kAlign>(qs + 4 * j, a);
  load_ints<kAlign>(qs + 16 + 4 * j, b);
  q[0] = a[0];
  q[1] = b[0];
}
// ---------------------------------------------------------------- the int8 dot of one part

// (d_a, s_a) of a Q8_1 block: its first 4 bytes as a half2.
__device__ __forceinline__ float2 q8_1_ds(const BlockQ8_1* a) {
  return __half22float2(*reinterpret_cast<const __half2*>(a));
}

// sum over the 32 weights of `part` of w * a, with a the Q8_1 blocks under this weight block.
template <WeightType T>
__device__ __forceinline__ float dot_part_q8_1(const uint8_t* blk, const BlockQ8_1* a, int part) {
  using C = Codes<T>;
  constexpr int kInts = 8 / C::kGroups;
  int q[8];
  C::get(blk, part, q);
  float sum = 0.0f;
#pragma unroll
  for (int g = 0; g < C::kGroups; ++g) {
    const BlockQ8_1* ab = a + C::act_block(part, g);
    int av[kInts];
    load_ints<4>(reinterpret_cast<const uint8_t*>(ab->qs) + 4 * C::act_int(part, g), av);
    int isum = 0;
#pragma unroll
    for (int i = 0; i < kInts; ++i) isum = __dp4a(q[g * kInts + i], av[i], isum);
    const float2 ws = C::scale(blk, part, g);
    const float2 ads = q8_1_ds(ab);
    sum += ws.x * ads.x * static_cast<float>(isum) + ws.y * ads.y;
  }
  return sum;
}

// The activations a quarter of a 32-element block meets: ints j and j + 4 of its Q8_1 block, and
// the block's (d_a, s_a). Loaded once and used for every weight row of a row group.
template <WeightType T>
struct ActQuarter {
  int a[2];
  float2 ds;
};
template <WeightType T>
__device__ __forceinline__ ActQuarter<T> act_quarter(const BlockQ8_1* ab, int j) {
  static_assert(Codes<T>::kGroups == 1, "32-element blocks: one group per part");
  ActQuarter<T> r;
  const int* qs = reinterpret_cast<const int*>(ab->qs);
  r.a[0] = qs[j];
  r.a[1] = qs[j + 4];
  r.ds = q8_1_ds(ab);
  return r;
}

// Lane j's share of dot_part_q8_1: the same terms over its two ints; the offset term m * s_a
// (Q4_1, Q5_1) is added by lane 0 of the four only (it covers the whole Q8_1 block).
template <WeightType T>
__device__ __forceinline__ float dot_quarter_q8_1(const uint8_t* blk, const ActQuarter<T>& act, int j) {
  int q[2];
  codes_quarter<T>(blk, j, q);
  const int isum = __dp4a(q[1], act.a[1], __dp4a(q[0], act.a[0], 0));
  const float2 ws = Codes<T>::scale(blk, 0, 0);
  return ws.x * act.ds.x * static_cast<float>(isum) + (j == 0 ? ws.y * act.ds.y : 0.0f);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

}  // namespace minfer::cuda::qb
