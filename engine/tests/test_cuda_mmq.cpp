// mmq (engine/cuda/mmq.cu), the int8 tensor-core prefill matmul, every quantized weight type.
// Shapes cover the kernel's tiles and their edges: output rows against 128/64/32/16-row CTA tiles and
// 16-row warp (m16) tiles (n_out 1, 7, 16, 33, 40, 65, 130, 896, 1152), tokens against 64-token
// CTA tiles and 8-token (n8) mma tiles (nt 1, 5, 7, 63, 64, 65, 67, 130, 200, 512), a partial last
// K step (n_in = 96 or 896 against 256-element steps), one step (256) and many (768, 4864: 19
// steps, so both shared-memory stages are reused many times); random-bytes and quantizer-made
// weights; with and without bias; every output tile of the kernel (128, 64, 32 and 16 rows per CTA,
// forced through mmq_with_tile, and the launcher's own choice; for Q4_0 and Q8_0 also the wgmma
// kernel of mmq_wgmma.h on an sm_90 device).
//   0. Bit-exact: every output equals, bit for bit, a host emulation of the kernel's documented
//      arithmetic: exact integer dots per scale group, then per 32-block in K order
//      wsum = fma(d_w, isum, 0) (Q6_K: the second half fma'd on top), and
//      acc = fma(m_w, s_a, d_a * wsum) + acc for the types with an offset (Q4_1, Q5_1, Q4_K,
//      Q5_K), acc = fma(d_a, wsum, acc) for the symmetric ones; y = acc + bias. Every tile
//      (128, 64, 32, 16 rows) gives the same bits.
//   1. Exact reference: float64 from the SAME weight and Q8_1 bytes (q8_1_reference in
//      quant_test_data.h: dequantize_row of both, Q8_1's stored f16 s where the kernel
//      uses it for the weight offset). Integer dots are exact; what is left is f32 rounding of
//      scales and of the running sum over 32-blocks: asserted rel L2 <= 1e-5 and every element
//      within 2e-5 * sum|terms| + 1e-6.
//   2. CPU twin matmul_mmq, which quantizes x itself (Q8_0 / Q8_1 / Q8_K by type): asserted
//      every element within 3e-2 * sum_k |w_k x_k| + 1e-5 (activation quantization error).
//   3. mmq with nt = 1 agrees with mmvq within the same f32 rounding (2e-5 * sum|terms|).
// Outputs are poisoned with NaN first, so an output the kernel did not write fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "cpu/matmul.h"
#include "cuda/mmq.h"
#include "cuda/mmq_wgmma.h"
#include "cuda/mmvq.h"
#include "tests/cuda_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

// ---------------------------------------------------------------- host emulation of the kernel

// A weight matrix as the kernel stages it: int8 codes per element (signed for the symmetric
// types, unsigned for those with an offset), the scale d_w of each scale group (16 elements for
// Q6_K, else 32) and the offset m_w of each 32-block (0 for the symmetric types), with the same
// f32 values as quant_blocks.cuh's Codes<T>::scale (f16 scale, times the integer sub-block scale
// for the K-quants: exact products).
struct StagedWeights {
  int group = 32;            // elements per scale group
  std::vector<int8_t> q;     // [n_out][n_in]
  std::vector<float> d;      // [n_out][n_in / group]
  std::vector<float> m;      // [n_out][n_in / 32]
  bool offset = false;       // the format has an offset (a min): Q4_1, Q5_1, Q4_K, Q5_K
};

StagedWeights stage_weights(WeightType t, const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in) {
  StagedWeights s;
  s.group = t == WeightType::Q6_K ? 16 : 32;
  s.offset = t == WeightType::Q4_1 || t == WeightType::Q5_1 || t == WeightType::Q4_K || t == WeightType::Q5_K;
  s.q.assign(static_cast<size_t>(n_out * n_in), 0);
  s.d.assign(static_cast<size_t>(n_out * (n_in / s.group)), 0.0f);
  s.m.assign(static_cast<size_t>(n_out * (n_in / QK)), 0.0f);
  const size_t rb = row_bytes(t, n_in);
  for (int64_t o = 0; o < n_out; ++o) {
    const uint8_t* row = w.data() + o * rb;
    int8_t* q = s.q.data() + o * n_in;
    float* d = s.d.data() + o * (n_in / s.group);
    float* m = s.m.data() + o * (n_in / QK);
    auto legacy = [&](auto tag, auto fill) {
      using B = decltype(tag);
      const auto* b = reinterpret_cast<const B*>(row);
      for (int64_t i = 0; i < n_in / QK; ++i) fill(b[i], q + QK * i, d[i], m[i]);
    };
    switch (t) {
      case WeightType::Q4_0:
        legacy(BlockQ4_0{}, [](const BlockQ4_0& b, int8_t* qq, float& dd, float&) {
          dd = fp16_to_f32(b.d);
          for (int j = 0; j < 16; ++j) {
            qq[j] = static_cast<int8_t>((b.qs[j] & 0xF) - 8);
            qq[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) - 8);
          }
        });
        break;
      case WeightType::Q4_1:
        legacy(BlockQ4_1{}, [](const BlockQ4_1& b, int8_t* qq, float& dd, float& mm) {
          dd = fp16_to_f32(b.d), mm = fp16_to_f32(b.m);
          for (int j = 0; j < 16; ++j) {
            qq[j] = static_cast<int8_t>(b.qs[j] & 0xF);
            qq[j + 16] = static_cast<int8_t>(b.qs[j] >> 4);
          }
        });
        break;
      case WeightType::Q5_0:
      case WeightType::Q5_1: {
        const bool offset = t == WeightType::Q5_1;
        auto five = [offset](const uint8_t* qs, const uint8_t* qhb, int8_t* qq) {
          uint32_t qh;
          std::memcpy(&qh, qhb, 4);
          for (int j = 0; j < 16; ++j) {
            const int lo = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
            const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
            qq[j] = static_cast<int8_t>(offset ? lo : lo - 16);
            qq[j + 16] = static_cast<int8_t>(offset ? hi : hi - 16);
          }
        };
        if (offset)
          legacy(BlockQ5_1{}, [&](const BlockQ5_1& b, int8_t* qq, float& dd, float& mm) {
            dd = fp16_to_f32(b.d), mm = fp16_to_f32(b.m);
            five(b.qs, b.qh, qq);
          });
        else
          legacy(BlockQ5_0{}, [&](const BlockQ5_0& b, int8_t* qq, float& dd, float&) {
            dd = fp16_to_f32(b.d);
            five(b.qs, b.qh, qq);
          });
        break;
      }
      case WeightType::Q8_0:
        legacy(BlockQ8_0{}, [](const BlockQ8_0& b, int8_t* qq, float& dd, float&) {
          dd = fp16_to_f32(b.d);
          for (int j = 0; j < QK; ++j) qq[j] = b.qs[j];
        });
        break;
      case WeightType::Q4_K:
      case WeightType::Q5_K: {
        // Sub-block j (32 elements): low (j even) / high (j odd) nibbles of qs[32*(j/2) + l],
        // Q5_K's 5th bit = bit j of qh[l]; d_w = d * sc_j, m_w = -(dmin * m_j).
        const bool five = t == WeightType::Q5_K;
        const size_t bytes = five ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
        for (int64_t i = 0; i < n_in / QK_K; ++i) {
          const uint8_t* sb = row + i * bytes;
          uint16_t dh, dminh;
          std::memcpy(&dh, sb, 2);
          std::memcpy(&dminh, sb + 2, 2);
          const uint8_t* scales = sb + 4;
          const uint8_t* qh = five ? sb + offsetof(BlockQ5_K, qh) : nullptr;
          const uint8_t* qs = sb + (five ? offsetof(BlockQ5_K, qs) : offsetof(BlockQ4_K, qs));
          for (int j = 0; j < 8; ++j) {
            uint8_t sc, mn;
            get_scale_min_k4(j, scales, &sc, &mn);
            const int64_t blk = i * 8 + j;
            d[blk] = fp16_to_f32(dh) * static_cast<float>(sc);
            m[blk] = -(fp16_to_f32(dminh) * static_cast<float>(mn));
            for (int l = 0; l < 32; ++l) {
              int c = (j % 2 ? qs[32 * (j / 2) + l] >> 4 : qs[32 * (j / 2) + l] & 0xF);
              if (five) c |= ((qh[l] >> j) & 1) << 4;
              q[QK * blk + l] = static_cast<int8_t>(c);
            }
          }
        }
        break;
      }
      case WeightType::Q6_K: {
        // Half h, quarter qr, l < 32: element 128h + 32qr + l; low 4 bits in ql[64h + 32(qr&1) + l]
        // (high nibble for qr >= 2), high 2 bits at bit 2qr of qh[32h + l]; scale 8h + 2qr + l/16.
        const auto* b = reinterpret_cast<const BlockQ6_K*>(row);
        for (int64_t i = 0; i < n_in / QK_K; ++i) {
          const float dd = fp16_to_f32(b[i].d);
          for (int g = 0; g < 16; ++g) d[16 * i + g] = dd * static_cast<float>(b[i].scales[g]);
          for (int h = 0; h < 2; ++h)
            for (int qr = 0; qr < 4; ++qr)
              for (int l = 0; l < 32; ++l) {
                const int lo = (b[i].ql[64 * h + 32 * (qr & 1) + l] >> (4 * (qr >> 1))) & 0xF;
                const int hi = (b[i].qh[32 * h + l] >> (2 * qr)) & 3;
                q[QK_K * i + 128 * h + 32 * qr + l] = static_cast<int8_t>((lo | (hi << 4)) - 32);
              }
        }
        break;
      }
      default: ADD_FAILURE() << "stage_weights: unexpected type " << name(t);
    }
  }
  return s;
}

// y[tk][o] as the kernel computes it (see the file comment, point 0). Every step is one IEEE
// operation written out (std::fma, or a product / sum stored to a variable before its use in a
// call), so host contraction cannot change it.
std::vector<float> emulate_kernel(const StagedWeights& sw, const std::vector<uint8_t>& xq, int64_t n_out, int64_t n_in,
                                  int64_t nt, const float* bias, ThreadPool& pool) {
  std::vector<float> y(static_cast<size_t>(nt * n_out));
  const int64_t nb = n_in / QK, groups = n_in / sw.group;
  const size_t xrb = row_bytes(WeightType::Q8_1, n_in);
  pool.parallel_for(n_out, 1, [&](int64_t o0, int64_t o1, int) {
    for (int64_t o = o0; o < o1; ++o) {
      const int8_t* wq = sw.q.data() + o * n_in;
      const float* wd = sw.d.data() + o * groups;
      const float* wm = sw.m.data() + o * nb;
      for (int64_t tk = 0; tk < nt; ++tk) {
        const auto* a = reinterpret_cast<const BlockQ8_1*>(xq.data() + tk * xrb);
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          int isum[2] = {0, 0};
          for (int k = 0; k < QK; ++k) isum[k / 16] += static_cast<int>(wq[QK * b + k]) * a[b].qs[k];
          float wsum;
          if (sw.group == 16) {
            const float w0 = std::fma(wd[2 * b], static_cast<float>(isum[0]), 0.0f);
            wsum = std::fma(wd[2 * b + 1], static_cast<float>(isum[1]), w0);
          } else {
            wsum = std::fma(wd[b], static_cast<float>(isum[0] + isum[1]), 0.0f);
          }
          const float da = fp16_to_f32(a[b].d), sa = fp16_to_f32(a[b].s);
          if (sw.offset) {
            const float p = da * wsum;
            const float upd = std::fma(wm[b], sa, p);
            acc = upd + acc;
          } else {
            acc = std::fma(da, wsum, acc);
          }
        }
        const float bv = bias ? bias[o] : 0.0f;
        y[tk * n_out + o] = acc + bv;
      }
    }
  });
  return y;
}

// ---------------------------------------------------------------- the parametrised test

struct Case {
  WeightType type;
  int64_t n_out, n_in, nt;
  WeightSource src;
};

class CudaMmq : public ::testing::TestWithParam<Case> {};

TEST_P(CudaMmq, MatchesEmulationReferenceAndCpu) {
  MINFER_REQUIRE_GPU();
  const auto [t, n_out, n_in, nt, src] = GetParam();
  const uint32_t seed = 700 + static_cast<uint32_t>(t) * 13 + static_cast<uint32_t>(n_out + nt + n_in);
  const auto w = random_weights(t, n_out, n_in, seed, src);
  const auto x = random_floats(static_cast<size_t>(nt * n_in), seed + 1);
  const auto bias = random_floats(static_cast<size_t>(n_out), seed + 2, 0.5f);
  const auto xq = quantize_q8_1_host(x, nt, n_in);
  const auto wd = dequantize_rows(t, w, n_out, n_in);
  const size_t ny = static_cast<size_t>(nt * n_out);
  ThreadPool pool(0);

  // The test's own decoding of the blocks must agree with the reference dequantization (else a
  // failure below would blame the kernel for a test bug).
  const StagedWeights sw = stage_weights(t, w, n_out, n_in);
  {
    int bad = 0;
    for (int64_t o = 0; o < n_out && bad < 4; ++o)
      for (int64_t k = 0; k < n_in && bad < 4; ++k) {
        const size_t i = static_cast<size_t>(o * n_in + k);
        const double dw = sw.d[static_cast<size_t>(o * (n_in / sw.group) + k / sw.group)];
        const double mw = sw.m[static_cast<size_t>(o * (n_in / QK) + k / QK)];
        const double v = dw * sw.q[i] + mw;
        if (std::fabs(v - wd[i]) > 1e-6 * (std::fabs(dw * sw.q[i]) + std::fabs(mw)) + 1e-30) {
          ++bad;
          ADD_FAILURE() << "test decoding of " << name(t) << " row " << o << " element " << k << ": " << v
                        << " vs dequantize_row " << wd[i];
        }
      }
    ASSERT_EQ(bad, 0) << "the test's block decoding is wrong; kernel not checked";
  }

  auto dw = to_device(w, "weights");
  auto dxq = to_device(xq, "Q8_1 activations");
  auto dbias = to_device(bias, "bias");
  // References, computed once: the bit-exact emulation (with and without bias), the float64
  // reference (the bias one is the plain one plus the bias: same to 1e-16) and the CPU backend.
  const auto emu_bias = emulate_kernel(sw, xq, n_out, n_in, nt, bias.data(), pool);
  const auto emu_plain = emulate_kernel(sw, xq, n_out, n_in, nt, nullptr, pool);
  const auto ref_plain = q8_1_reference(t, w, n_out, n_in, xq, nt, nullptr);
  Q8Reference ref_bias = ref_plain;
  for (size_t i = 0; i < ny; ++i) {
    ref_bias.y[i] += bias[i % static_cast<size_t>(n_out)];
    ref_bias.mag[i] += std::fabs(bias[i % static_cast<size_t>(n_out)]);
  }
  std::vector<float> cpu_bias(ny), cpu_plain(ny);
  matmul_mmq(w.data(), t, n_out, n_in, x.data(), nt, bias.data(), cpu_bias.data(), pool);
  matmul_mmq(w.data(), t, n_out, n_in, x.data(), nt, nullptr, cpu_plain.data(), pool);
  const auto mag_plain = abs_products(wd, x, n_out, n_in, nt, nullptr);
  std::vector<double> mag_bias = mag_plain;
  for (size_t i = 0; i < ny; ++i) mag_bias[i] += std::fabs(bias[i % static_cast<size_t>(n_out)]);

  // Tile -1: the wgmma kernel (mmq_wgmma.h), which mmq() does not take; where it applies.
  for (int tile : {0, 128, -1, 64, 32, 16}) for (bool with_bias : {true, false}) {
    if (tile == -1 && !cuda::mmq_wgmma_applies(t, n_in, dw.get(), dxq.get())) continue;
    SCOPED_TRACE(std::string(with_bias ? "with bias" : "no bias") + ", tile rows " +
                 (tile == -1 ? std::string("128 (mmq_wgmma)") : tile ? std::to_string(tile) : std::string("auto")));
    auto dy = poisoned(ny * sizeof(float));
    if (tile == -1)
      cuda::mmq_wgmma(t, dw.get(), n_out, n_in, dxq.get(), nt, with_bias ? dbias.as<float>() : nullptr, dy.as<float>(),
                      nullptr);
    else if (tile == 0)
      cuda::mmq(t, dw.get(), n_out, n_in, dxq.get(), nt, with_bias ? dbias.as<float>() : nullptr, dy.as<float>(),
                nullptr);
    else
      cuda::mmq_with_tile(t, dw.get(), n_out, n_in, dxq.get(), nt, with_bias ? dbias.as<float>() : nullptr,
                          dy.as<float>(), tile, nullptr);
    const auto got = to_host<float>(dy, ny);

    int bad = 0;
    const auto& emu = with_bias ? emu_bias : emu_plain;
    for (size_t i = 0; i < ny && bad < 8; ++i)
      if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(emu[i])) {
        ++bad;
        ADD_FAILURE() << name(t) << " token " << i / n_out << " row " << i % n_out << ": got " << got[i]
                      << ", bit-exact emulation " << emu[i] << " (bits " << std::hex
                      << std::bit_cast<uint32_t>(got[i]) << " vs " << std::bit_cast<uint32_t>(emu[i]) << std::dec
                      << ")";
      }

    const auto& ref = with_bias ? ref_bias : ref_plain;
    EXPECT_LE(rel_l2(got, to_float(ref.y)), 1e-5) << name(t) << " relative L2 error vs the float64 reference";
    for (size_t i = 0; i < ny && bad < 8; ++i)
      if (!std::isfinite(got[i]) || std::fabs(got[i] - ref.y[i]) > 2e-5 * ref.mag[i] + 1e-6) {
        ++bad;
        ADD_FAILURE() << name(t) << " token " << i / n_out << " row " << i % n_out << ": got " << got[i]
                      << ", reference " << ref.y[i] << " (scale " << ref.mag[i] << ")";
      }

    const auto& cpu = with_bias ? cpu_bias : cpu_plain;
    const auto& mag = with_bias ? mag_bias : mag_plain;
    for (size_t i = 0; i < ny && bad < 8; ++i)
      if (!std::isfinite(got[i]) || std::fabs(double(got[i]) - cpu[i]) > 3e-2 * mag[i] + 1e-5) {
        ++bad;
        ADD_FAILURE() << name(t) << " token " << i / n_out << " row " << i % n_out << ": got " << got[i]
                      << ", CPU matmul_mmq " << cpu[i] << " (scale " << mag[i] << ")";
      }
    EXPECT_EQ(bad, 0);
  }
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (WeightType t : kQuantTypes) {
    const auto bytes = WeightSource::RandomBytes;
    if (info(t).block_elems == QK) {
      c.push_back({t, 7, 96, 5, bytes});        // K shorter than one step
      c.push_back({t, 33, 896, 67, bytes});     // 3.5 K steps, 2 token tiles
      c.push_back({t, 130, 4864, 64, bytes});   // 3 output tiles, 19 K steps
      c.push_back({t, 65, 896, 130, WeightSource::Quantized});
      c.push_back({t, 1, 32, 1, bytes});
      // Tensor-core tiling edges: one m16 tile, partial m16 tiles (40 = 2.5), partial n8 tiles
      // (7, 63, 65 = 64 + 1, 200 = 3*64 + 8), the model's shapes (896, 1152 rows) up to 512 tokens.
      c.push_back({t, 16, 896, 1, bytes});
      c.push_back({t, 40, 896, 7, bytes});
      c.push_back({t, 40, 4864, 63, bytes});
      c.push_back({t, 16, 4864, 65, bytes});
      c.push_back({t, 896, 896, 64, bytes});
      c.push_back({t, 1152, 896, 200, WeightSource::Quantized});
      c.push_back({t, 896, 896, 512, bytes});
      c.push_back({t, 40, 4864, 512, bytes});
    } else {
      c.push_back({t, 1, 256, 1, bytes});
      c.push_back({t, 7, 768, 5, bytes});
      c.push_back({t, 130, 768, 67, bytes});
      c.push_back({t, 33, 4864, 64, bytes});
      c.push_back({t, 65, 768, 130, WeightSource::Quantized});
      // As above; K-quant rows are whole 256-element super-blocks (256, 768, 4864).
      c.push_back({t, 16, 256, 1, bytes});
      c.push_back({t, 40, 256, 7, bytes});
      c.push_back({t, 40, 4864, 63, bytes});
      c.push_back({t, 16, 768, 65, bytes});
      c.push_back({t, 896, 768, 64, bytes});
      c.push_back({t, 1152, 256, 200, WeightSource::Quantized});
      c.push_back({t, 896, 768, 512, bytes});
      c.push_back({t, 40, 4864, 512, bytes});
    }
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaMmq, ::testing::ValuesIn(cases()), [](const auto& i) {
  return std::string(name(i.param.type)) + "_" + std::to_string(i.param.n_out) + "x" + std::to_string(i.param.n_in) +
         "_nt" + std::to_string(i.param.nt) + "_" + source_name(i.param.src);
});

// One token through mmq and through mmvq: the same integer dots, summed in a different order.
TEST(CudaMmqVsMmvq, OneTokenAgrees) {
  MINFER_REQUIRE_GPU();
  for (WeightType t : kQuantTypes) {
    const int64_t n_out = 97, n_in = info(t).block_elems == QK ? 896 : 768;
    const auto w = random_weights(t, n_out, n_in, 4242 + static_cast<uint32_t>(t));
    const auto x = random_floats(static_cast<size_t>(n_in), 17);
    const auto xq = quantize_q8_1_host(x, 1, n_in);
    const auto ref = q8_1_reference(t, w, n_out, n_in, xq, 1, nullptr);
    auto dw = to_device(w, "weights");
    auto dxq = to_device(xq, "Q8_1 activations");
    auto d1 = poisoned(n_out * sizeof(float));
    auto d2 = poisoned(n_out * sizeof(float));
    cuda::mmq(t, dw.get(), n_out, n_in, dxq.get(), 1, nullptr, d1.as<float>(), nullptr);
    cuda::mmvq(t, dw.get(), n_out, n_in, dxq.get(), nullptr, d2.as<float>(), nullptr);
    const auto y1 = to_host<float>(d1, n_out);
    const auto y2 = to_host<float>(d2, n_out);
    for (int64_t o = 0; o < n_out; ++o)
      EXPECT_NEAR(y1[o], y2[o], 2e-5 * ref.mag[o] + 1e-6) << name(t) << " row " << o;
  }
}

TEST(CudaMmqArgs, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto dw = poisoned(4096);
  auto dx = poisoned(4096);
  auto dy = poisoned(4096);
  EXPECT_THROW(cuda::mmq(WeightType::F32, dw.get(), 1, 32, dx.get(), 1, nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmq(WeightType::Q6_K, dw.get(), 1, 896, dx.get(), 1, nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmq(WeightType::Q5_1, dw.get(), 1, 48, dx.get(), 1, nullptr, dy.as<float>(), nullptr), Error);
  EXPECT_THROW(cuda::mmq_with_tile(WeightType::Q8_0, dw.get(), 1, 32, dx.get(), 1, nullptr, dy.as<float>(), 48, nullptr),
               Error);
  EXPECT_TRUE(cuda::mmq_supports(WeightType::Q4_K));
  EXPECT_FALSE(cuda::mmq_supports(WeightType::F16));
}

}  // namespace
