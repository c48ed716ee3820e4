// Exact dequantization of hand-built blocks with known scales and codes, for every type.
// Blocks are packed here from the layout as the GGUF tables describe it (independently of the
// library's quantizers), and a few are given as literal bytes worked out by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

using namespace minfer;

namespace {

std::vector<float> dequant(WeightType t, const void* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(t, src, out.data(), n);
  return out;
}

TEST(Dequant, FloatTypes) {
  const float f[3] = {1.5f, -2.25f, 3.0e-8f};
  EXPECT_EQ(dequant(WeightType::F32, f, 3), std::vector<float>(f, f + 3));

  const uint16_t h[5] = {0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001};  // 1, -2, 0.5, 65504, 2^-24
  EXPECT_EQ(dequant(WeightType::F16, h, 5), (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f, 0x1p-24f}));

  const uint16_t b[4] = {0x3F80, 0xC040, 0x4049, 0x0000};  // 1, -3, 3.140625, 0
  EXPECT_EQ(dequant(WeightType::BF16, b, 4), (std::vector<float>{1.0f, -3.0f, 3.140625f, 0.0f}));
}

TEST(Dequant, Q4_0LiteralBytes) {
  BlockQ4_0 blk{};
  blk.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) blk.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequant(WeightType::Q4_0, &blk, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8)) << j;
    EXPECT_EQ(y[j + 16], 0.5f * (15 - j - 8)) << j;
  }
}

TEST(Dequant, Q4_1) {
  BlockQ4_1 blk{};
  blk.d = 0x3400;  // 0.25
  blk.m = 0xBC00;  // -1
  blk.qs[0] = 0xF3;  // element 0 = 3, element 16 = 15
  blk.qs[7] = 0x0A;  // element 7 = 10, element 23 = 0
  auto y = dequant(WeightType::Q4_1, &blk, 32);
  EXPECT_EQ(y[0], 0.25f * 3 - 1);
  EXPECT_EQ(y[16], 0.25f * 15 - 1);
  EXPECT_EQ(y[7], 0.25f * 10 - 1);
  EXPECT_EQ(y[23], -1.0f);
  EXPECT_EQ(y[1], -1.0f);
}

// Q5 blocks: code j = nibble | (bit j of the little-endian 32-bit qh) << 4.
template <class Block>
void pack_q5(const int q[32], Block* b) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) b->qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
  b->qh[0] = qh & 0xFF;
  b->qh[1] = (qh >> 8) & 0xFF;
  b->qh[2] = (qh >> 16) & 0xFF;
  b->qh[3] = qh >> 24;
}

TEST(Dequant, Q5_0HighBits) {
  // Literal: qs[0] = 0x21, qh bits 0 and 16 set -> element 0 = 17, element 16 = 18.
  BlockQ5_0 lit{};
  lit.d = 0x4000;  // 2
  lit.qs[0] = 0x21;
  lit.qh[0] = 0x01;
  lit.qh[2] = 0x01;
  auto y = dequant(WeightType::Q5_0, &lit, 32);
  EXPECT_EQ(y[0], 2.0f * (17 - 16));
  EXPECT_EQ(y[16], 2.0f * (18 - 16));
  EXPECT_EQ(y[1], 2.0f * -16);

  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = (j * 7 + 3) % 32;  // every code 0..31 appears
  BlockQ5_0 blk{};
  blk.d = 0x3A00;  // 0.75
  pack_q5(q, &blk);
  y = dequant(WeightType::Q5_0, &blk, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.75f * (q[j] - 16)) << j;
}

TEST(Dequant, Q5_1HighBits) {
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = (j * 13 + 5) % 32;
  BlockQ5_1 blk{};
  blk.d = 0x3800;  // 0.5
  blk.m = 0xC200;  // -3
  pack_q5(q, &blk);
  auto y = dequant(WeightType::Q5_1, &blk, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.5f * q[j] - 3.0f) << j;
}

TEST(Dequant, Q8_0AndQ8_1) {
  BlockQ8_0 b0{};
  b0.d = 0x3400;  // 0.25
  BlockQ8_1 b1{};
  b1.d = 0x3C00;  // 1
  for (int j = 0; j < 32; ++j) b0.qs[j] = b1.qs[j] = static_cast<int8_t>(j * 8 - 127);
  auto y0 = dequant(WeightType::Q8_0, &b0, 32);
  auto y1 = dequant(WeightType::Q8_1, &b1, 32);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(y0[j], 0.25f * (j * 8 - 127));
    EXPECT_EQ(y1[j], float(j * 8 - 127));
  }
}

// 6-bit scale/min packing, written out bit by bit from the layout description.
void pack_k4_scales(const int sc[8], const int m[8], uint8_t out[12]) {
  std::memset(out, 0, 12);
  for (int j = 0; j < 4; ++j) {
    out[j] |= static_cast<uint8_t>(sc[j]);           // low 6 bits of byte j
    out[j + 4] |= static_cast<uint8_t>(m[j]);        // low 6 bits of byte j+4
  }
  for (int j = 4; j < 8; ++j) {
    out[j + 4] |= static_cast<uint8_t>(sc[j] & 15);         // low nibble of byte j+4
    out[j + 4] |= static_cast<uint8_t>((m[j] & 15) << 4);   // high nibble of byte j+4
    out[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);  // top 2 bits of byte j-4
    out[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);       // top 2 bits of byte j
  }
}

TEST(Dequant, K4ScaleLiteral) {
  // Hand-decoded: byte 1 = 0b10'000011 (sc1 = 3, top bits of sc5 = 2), byte 9 = 0x7C
  // (sc5 low nibble 12, m5 low nibble 7), byte 5 = 0b01'000100 (m1 = 4, top bits of m5 = 1).
  uint8_t s[12] = {};
  s[1] = 0b10000011;
  s[5] = 0b01000100;
  s[9] = 0x7C;
  uint8_t sc, m;
  get_scale_min_k4(1, s, &sc, &m);
  EXPECT_EQ(sc, 3);
  EXPECT_EQ(m, 4);
  get_scale_min_k4(5, s, &sc, &m);
  EXPECT_EQ(sc, 2 * 16 + 12);
  EXPECT_EQ(m, 1 * 16 + 7);
}

const int kSc[8] = {1, 2, 63, 17, 33, 48, 5, 60};
const int kMin[8] = {0, 63, 7, 32, 16, 9, 40, 1};

TEST(Dequant, Q4_K) {
  BlockQ4_K blk{};
  blk.d = 0x3400;     // 0.25
  blk.dmin = 0x3800;  // 0.5
  pack_k4_scales(kSc, kMin, blk.scales);
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 5 + e / 16) % 16;
  for (int g = 0; g < 4; ++g)  // 64-element group g: bytes 32g.. hold elements 64g+l (low), 64g+32+l (high)
    for (int l = 0; l < 32; ++l) blk.qs[32 * g + l] = static_cast<uint8_t>(q[64 * g + l] | (q[64 * g + 32 + l] << 4));
  auto y = dequant(WeightType::Q4_K, &blk, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y[e], 0.25f * kSc[j] * q[e] - 0.5f * kMin[j]) << e;
  }
}

TEST(Dequant, Q5_K) {
  BlockQ5_K blk{};
  blk.d = 0x3000;     // 0.125
  blk.dmin = 0x3C00;  // 1
  pack_k4_scales(kSc, kMin, blk.scales);
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 11 + e / 32) % 32;
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l)
      blk.qs[32 * g + l] = static_cast<uint8_t>((q[64 * g + l] & 15) | ((q[64 * g + 32 + l] & 15) << 4));
  for (int e = 0; e < 256; ++e)  // fifth bit of element 32j+l is bit j of qh[l]
    blk.qh[e % 32] |= static_cast<uint8_t>((q[e] >> 4) << (e / 32));
  auto y = dequant(WeightType::Q5_K, &blk, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y[e], 0.125f * kSc[j] * q[e] - 1.0f * kMin[j]) << e;
  }
}

TEST(Dequant, Q6_K) {
  BlockQ6_K blk{};
  blk.d = 0x2C00;  // 0.0625
  for (int j = 0; j < 16; ++j) blk.scales[j] = static_cast<int8_t>(j % 2 ? -(j * 8) : j * 8 + 1);
  blk.scales[15] = -128;
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (e * 37 + 11) % 64;
  // Element e: half h = e/128, quarter c = (e%128)/32, l = e%32. Low 4 bits in ql[64h + l + 32(c%2)]
  // (low nibble for c < 2, high for c >= 2); high 2 bits in qh[32h + l] at bits 2c, 2c+1.
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, c = (e % 128) / 32, l = e % 32;
    blk.ql[64 * h + l + 32 * (c % 2)] |= static_cast<uint8_t>((q[e] & 15) << (c < 2 ? 0 : 4));
    blk.qh[32 * h + l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * c));
  }
  auto y = dequant(WeightType::Q6_K, &blk, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.0625f * blk.scales[e / 16] * (q[e] - 32)) << e;
}

TEST(Dequant, Q8_K) {
  BlockQ8_K blk{};
  blk.d = 0.125f;
  for (int e = 0; e < 256; ++e) blk.qs[e] = static_cast<int8_t>((e * 29) % 255 - 127);
  auto y = dequant(WeightType::Q8_K, &blk, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 0.125f * blk.qs[e]);
}

TEST(Dequant, SeveralBlocksInARow) {
  BlockQ8_0 b[3] = {};
  for (int i = 0; i < 3; ++i) {
    b[i].d = f32_to_fp16(float(i + 1));
    for (int j = 0; j < 32; ++j) b[i].qs[j] = static_cast<int8_t>(j - i);
  }
  auto y = dequant(WeightType::Q8_0, b, 96);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[32 * i + j], float((i + 1) * (j - i)));
}

TEST(Dequant, RejectsRowsNotAMultipleOfTheBlock) {
  BlockQ4_K blk{};
  float out[300];
  EXPECT_THROW(dequantize_row(WeightType::Q4_K, &blk, out, 300), Error);
  EXPECT_THROW(quantize_row(WeightType::Q4_0, out, &blk, 33), Error);
}

// Quantizers must reproduce data that the format represents exactly, byte-for-byte compatible
// codes included (the largest magnitude on the negative side picks d = max / -8).
TEST(Quantize, ExactlyRepresentableDataRoundTripsExactly) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * ((j * 7) % 16 - 8);  // codes 0..15, -4 is the max
  BlockQ4_0 b4{};
  quantize_row(WeightType::Q4_0, x, &b4, 32);
  EXPECT_EQ(b4.d, 0x3800);  // 0.5
  EXPECT_EQ(dequant(WeightType::Q4_0, &b4, 32), std::vector<float>(x, x + 32));

  for (int j = 0; j < 32; ++j) x[j] = 0.25f * ((j * 5) % 32 - 16);
  BlockQ5_0 b5{};
  quantize_row(WeightType::Q5_0, x, &b5, 32);
  EXPECT_EQ(dequant(WeightType::Q5_0, &b5, 32), std::vector<float>(x, x + 32));

  for (int j = 0; j < 32; ++j) x[j] = 2.0f * (j * 9 % 255 - 127);
  x[3] = 254.0f;  // amax = 254 -> d = 2
  BlockQ8_0 b8{};
  quantize_row(WeightType::Q8_0, x, &b8, 32);
  EXPECT_EQ(b8.d, 0x4000);
  EXPECT_EQ(dequant(WeightType::Q8_0, &b8, 32), std::vector<float>(x, x + 32));
}

TEST(Quantize, Q8_1SumAndQ8_KBlockSums) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(256);
  for (auto& v : x) v = nd(rng);
  BlockQ8_1 b1[8];
  quantize_row(WeightType::Q8_1, x.data(), b1, 256);
  for (const auto& b : b1) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += b.qs[j];
    EXPECT_EQ(b.s, f32_to_fp16(fp16_to_f32(b.d) * sum));
  }
  BlockQ8_K bk{};
  quantize_row(WeightType::Q8_K, x.data(), &bk, 256);
  for (int s = 0; s < 16; ++s) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += bk.qs[16 * s + l];
    EXPECT_EQ(bk.bsums[s], sum);
  }
}

}  // namespace
