// The fused decode matvecs (engine/cuda/mmvq_fused.cu) against their unfused reference path, run
// on the GPU with the existing launchers:
//   mmvq_fused         == rms_norm -> quantize_q8_1 -> mmvq (+ bias) per matrix [-> add residual]
//   mmvq_swiglu_fused  == rms_norm -> quantize_q8_1 -> mmvq gate, mmvq up -> swiglu
// Every quantized type mmvq supports (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K), with and
// without the norm, bias, residual and the x_hat output; 1, 2 and 3 matrices per launch (also of
// mixed types); n_in 896 (legacy types; 768 for the K-quants, whose blocks are 256), 4864, and for
// the legacy types 96 and 4000 (not multiples of 256; 4000 takes four warps per row), plus 16384
// (the largest row) and 3584 (Qwen2.5-7B). Rows that stream for mmvq (stream_usable: 32-element
// blocks, >= 2048 elements, a multiple of 4 bytes) take the streaming kernel (mmvq_stream.cu), the
// others mmvq_fused.cu's kernels, and a group with both kinds (mixed_stream_and_k) takes both.
// Q4_K rows stream through the direct kernel, which takes one weight type per launch: a group of
// several direct types (mixed_direct_types, and Q8_0 + Q4_K in mixed_stream_and_k) splits into
// one launch per type.
// For the latter the row counts are chosen so that, on a 132-SM H200, every variant of them that
// such rows reach runs: partial tiles and tiles that end inside a matrix (131, 7, 33; 1, 2, 3). Inputs have planted outliers (x8 every
// 997th value); every output is poisoned with NaN first, so an unwritten element fails.
//
// Tolerances:
//   x_hat (the fused RMSNorm output) vs rms_norm: expected bit-equal (the fused prologue sums the
//     squares with rms_norm's per-thread loop and cub::BlockReduce<double, 256>); at most 1 ulp is
//     accepted, and any difference is reported.
//   y vs mmvq of quantize_q8_1 of the SAME x_hat (the fused x_hat): bit-equal, always (same Q8_1
//     device code, same dot helpers, same per-row thread split and reduction order: mmvq and the
//     fused launchers pick the kernel by the same rule, stream_usable).
//   y vs the unfused chain from rms_norm: bit-equal when x_hat is bit-equal (always without the
//     norm); otherwise every element within 1e-6 * sum_k |w_k x_hat_k| (+|bias|), because a 1-ulp
//     change of x_hat moves each term by about 6e-8 of itself (it only exceeds that if it flips a
//     Q8_1 rounding, which the test would then show).
//   y + residual: bit-equal to the host's f32 sum of the fused y and the residual, and to the
//     unfused add when y is bit-equal. SwiGLU: gate/up as y above; silu(gate) * up bit-equal to the
//     unfused swiglu launcher run on the fused gate and up; y's optional Q8_1 copy byte-equal to
//     quantize_q8_1 of y, and its block counters back at zero after each launch.
// Plus: a captured CUDA graph of a fused layer (q/k/v, gate/up/SwiGLU, down + residual) replayed
// after rewriting x gives the eager unfused results bit for bit; bad arguments are errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/elementwise.h"
#include "cuda/mmvq.h"
#include "cuda/mmvq_fused.h"
#include "cuda/quantize.h"
#include "cuda/rms_norm.h"
#include "tests/cuda_test_util.h"

using namespace minfer;
using namespace minfer::testing;

namespace {

constexpr float kEps = 1e-6f;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Distance in units in the last place (0 for equal bit patterns, huge for NaN/inf mismatches).
int64_t ulp_distance(float a, float b) {
  if (bits_of(a) == bits_of(b)) return 0;
  if (!std::isfinite(a) || !std::isfinite(b)) return INT64_MAX;
  auto ordered = [](float f) {
    const int64_t i = static_cast<int32_t>(bits_of(f));
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : i;
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// Counts elements whose bits differ; reports the first few.
size_t expect_bit_equal(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (bits_of(got[i]) != bits_of(want[i]) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " want " << want[i] << " (bits differ)";
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
  return bad;
}

std::vector<float> host_floats(const cuda::DeviceBuffer& b, int64_t n) { return to_host<float>(b, static_cast<size_t>(n)); }
cuda::DeviceBuffer poisoned_floats(int64_t n) { return poisoned(static_cast<size_t>(n) * sizeof(float)); }

uint32_t seed_of(const std::string& s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h % 100000;
}

// The activations and the norm of one case, on both sides.
struct Input {
  std::vector<float> x, norm_w;
  cuda::DeviceBuffer dx, dnorm;
  Input(int64_t n_in, uint32_t seed)
      : x(random_floats(static_cast<size_t>(n_in), seed)), norm_w(random_floats(static_cast<size_t>(n_in), seed + 1, 0.7f)) {
    dx = to_device(x, "x");
    dnorm = to_device(norm_w, "norm weight");
  }
};

// rms_norm (or x as is) -> quantize_q8_1 with the existing launchers: the unfused prologue.
struct UnfusedPrologue {
  cuda::DeviceBuffer xh, q;
  const float* x_hat = nullptr;
  UnfusedPrologue(const Input& in, int64_t n_in, bool norm)
      : xh(poisoned_floats(n_in)), q(poisoned(row_bytes(WeightType::Q8_1, n_in))) {
    x_hat = in.dx.as<float>();
    if (norm) {
      cuda::rms_norm(in.dx.as<float>(), in.dnorm.as<float>(), xh.as<float>(), 1, n_in, kEps, nullptr);
      x_hat = xh.as<float>();
    }
    cuda::quantize_q8_1(x_hat, 1, n_in, q.get(), nullptr);
  }
  // Quantizes a given device row instead (the fused x_hat).
  UnfusedPrologue(const float* x_hat_dev, int64_t n_in)
      : xh(), q(poisoned(row_bytes(WeightType::Q8_1, n_in))), x_hat(x_hat_dev) {
    cuda::quantize_q8_1(x_hat, 1, n_in, q.get(), nullptr);
  }
};

// Compares the fused x_hat with rms_norm's; returns whether every bit matches.
bool check_x_hat(const std::vector<float>& fused, const std::vector<float>& ref, const std::string& what) {
  size_t differ = 0;
  int64_t worst = 0;
  for (size_t i = 0; i < fused.size(); ++i) {
    const int64_t d = ulp_distance(fused[i], ref[i]);
    if (d != 0) ++differ;
    worst = std::max(worst, d);
  }
  EXPECT_LE(worst, 1) << what << ": fused x_hat differs from rms_norm by up to " << worst << " ulp";
  if (differ)
    std::cout << "[ note ] " << what << ": fused x_hat differs from rms_norm in " << differ << " of " << fused.size()
              << " elements (max " << worst << " ulp): y is checked against the unfused chain within 1e-6 of sum|w x|"
              << std::endl;
  return differ == 0;
}

// |y - y_ref| <= 1e-6 * (sum_k |w_k x_hat_k| + |bias|): the tolerance when x_hat is not bit-equal.
void expect_close_to_unfused(WeightType t, const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in,
                             const std::vector<float>& x_hat, const float* bias, const std::vector<float>& got,
                             const std::vector<float>& ref, const std::string& what) {
  const auto wd = dequantize_rows(t, w, n_out, n_in);
  const auto mag = abs_products(wd, x_hat, n_out, n_in, 1, bias);
  size_t bad = 0;
  for (int64_t o = 0; o < n_out; ++o)
    if (!std::isfinite(got[o]) || std::fabs(static_cast<double>(got[o]) - ref[o]) > 1e-6 * mag[o])
      if (bad++ < 5) ADD_FAILURE() << what << " row " << o << ": got " << got[o] << ", unfused " << ref[o];
  EXPECT_EQ(bad, 0u) << what;
}

// ---------------------------------------------------------------- mmvq_fused

struct MatSpec {
  WeightType type;
  int64_t n_out;
};
struct FusedCase {
  std::string name;
  int64_t n_in;
  std::vector<MatSpec> mats;
  bool norm, bias, residual, x_hat_out;
};
void PrintTo(const FusedCase& c, std::ostream* os) { *os << c.name; }

struct Mat {
  MatSpec spec;
  std::vector<uint8_t> w;
  std::vector<float> bias, res;
  cuda::DeviceBuffer dw, dbias, dres;
  Mat(MatSpec s, int64_t n_in, uint32_t seed) : spec(s) {
    const bool small = s.n_out * n_in <= (int64_t{1} << 22);
    w = random_weights(s.type, s.n_out, n_in, seed, small ? WeightSource::Quantized : WeightSource::RandomBytes);
    bias = random_floats(static_cast<size_t>(s.n_out), seed + 1, 0.5f);
    res = random_floats(static_cast<size_t>(s.n_out), seed + 2);
    dw = to_device(w, "weights");
    dbias = to_device(bias, "bias");
    dres = to_device(res, "residual");
  }
};

class CudaMmvqFused : public ::testing::TestWithParam<FusedCase> {};

TEST_P(CudaMmvqFused, EqualsUnfusedChain) {
  MINFER_REQUIRE_GPU();
  const FusedCase& c = GetParam();
  const uint32_t seed = seed_of(c.name);
  const int64_t n_in = c.n_in;
  Input in(n_in, seed);
  std::vector<Mat> mats;
  mats.reserve(c.mats.size());
  for (size_t i = 0; i < c.mats.size(); ++i) mats.emplace_back(c.mats[i], n_in, seed + 10 * static_cast<uint32_t>(i + 1));

  // The unfused reference chain.
  UnfusedPrologue ref(in, n_in, c.norm);
  std::vector<cuda::DeviceBuffer> y_ref, yr_ref;
  for (const Mat& m : mats) {
    y_ref.push_back(poisoned_floats(m.spec.n_out));
    cuda::mmvq(m.spec.type, m.dw.get(), m.spec.n_out, n_in, ref.q.get(), c.bias ? m.dbias.as<float>() : nullptr,
               y_ref.back().as<float>(), nullptr);
    yr_ref.push_back(poisoned_floats(m.spec.n_out));
    if (c.residual)
      cuda::add(y_ref.back().as<float>(), m.dres.as<float>(), yr_ref.back().as<float>(), m.spec.n_out, nullptr);
  }

  // The fused launch.
  auto run_fused = [&](float* x_hat_out, std::vector<cuda::DeviceBuffer>& y, std::vector<cuda::DeviceBuffer>& yr) {
    std::vector<cuda::FusedMatvecOut> outs;
    for (const Mat& m : mats) {
      y.push_back(poisoned_floats(m.spec.n_out));
      yr.push_back(poisoned_floats(m.spec.n_out));
      outs.push_back({m.spec.type, m.dw.get(), m.spec.n_out, c.bias ? m.dbias.as<float>() : nullptr, y.back().as<float>(),
                      c.residual ? m.dres.as<float>() : nullptr, c.residual ? yr.back().as<float>() : nullptr});
    }
    cuda::mmvq_fused(in.dx.as<float>(), n_in, c.norm ? in.dnorm.as<float>() : nullptr, kEps, x_hat_out, outs.data(),
                     static_cast<int>(outs.size()), nullptr);
  };
  auto dxh = poisoned_floats(n_in);
  std::vector<cuda::DeviceBuffer> y, yr;
  run_fused(c.x_hat_out ? dxh.as<float>() : nullptr, y, yr);

  // x_hat: the case's own output, or (norm without x_hat_out) a second launch that writes it.
  bool x_hat_equal = true;
  std::vector<float> x_hat = in.x;
  if (c.x_hat_out || c.norm) {
    if (!c.x_hat_out) {
      std::vector<cuda::DeviceBuffer> y2, yr2;
      run_fused(dxh.as<float>(), y2, yr2);
      for (size_t i = 0; i < mats.size(); ++i)  // the same kernel twice: the same bits
        expect_bit_equal(host_floats(y2[i], mats[i].spec.n_out), host_floats(y[i], mats[i].spec.n_out),
                         c.name + ": second launch y");
    }
    x_hat = host_floats(dxh, n_in);
    const std::vector<float> want = c.norm ? host_floats(ref.xh, n_in) : in.x;
    x_hat_equal = check_x_hat(x_hat, want, c.name);
    if (!c.norm) expect_bit_equal(x_hat, in.x, c.name + ": x_hat_out without norm is x");
  }
  // mmvq of quantize_q8_1 of the fused x_hat: the bit-exact reference in every case.
  UnfusedPrologue same(x_hat_equal ? ref.x_hat : dxh.as<float>(), n_in);

  for (size_t i = 0; i < mats.size(); ++i) {
    const Mat& m = mats[i];
    const int64_t n_out = m.spec.n_out;
    const std::string what = c.name + " matrix " + std::to_string(i) + " (" + name(m.spec.type) + ")";
    const auto got = host_floats(y[i], n_out);
    auto dsame = poisoned_floats(n_out);
    cuda::mmvq(m.spec.type, m.dw.get(), n_out, n_in, same.q.get(), c.bias ? m.dbias.as<float>() : nullptr,
               dsame.as<float>(), nullptr);
    expect_bit_equal(got, host_floats(dsame, n_out), what + ": y vs mmvq of the same x_hat");
    const auto want = host_floats(y_ref[i], n_out);
    if (x_hat_equal)
      expect_bit_equal(got, want, what + ": y vs the unfused chain");
    else
      expect_close_to_unfused(m.spec.type, m.w, n_out, n_in, x_hat, c.bias ? m.bias.data() : nullptr, got, want,
                              what + ": y vs the unfused chain");
    if (c.residual) {
      const auto got_r = host_floats(yr[i], n_out);
      std::vector<float> sum(static_cast<size_t>(n_out));
      for (int64_t o = 0; o < n_out; ++o) sum[o] = got[o] + m.res[o];
      expect_bit_equal(got_r, sum, what + ": y + residual vs the host sum");
      if (x_hat_equal) expect_bit_equal(got_r, host_floats(yr_ref[i], n_out), what + ": y + residual vs unfused add");
    } else {
      // Not asked for: still poisoned (nothing was written there).
      const auto untouched = host_floats(yr[i], n_out);
      size_t written = 0;
      for (float v : untouched) written += bits_of(v) != 0xFFFFFFFFu;
      EXPECT_EQ(written, 0u) << what << ": y_plus_residual written without a residual";
    }
  }
}

std::vector<FusedCase> fused_cases() {
  using W = WeightType;
  std::vector<FusedCase> cs;
  for (WeightType t : kQuantTypes) {
    const bool legacy = info(t).block_elems == QK;
    const int64_t narrow = legacy ? 896 : 768;  // one warp per row
    const std::string tn = name(t);
    //                 name                 n_in    matrices                          norm  bias  res   x_hat
    cs.push_back({tn + "_qkv",        narrow, {{t, 896}, {t, 128}, {t, 128}},  true,  true,  false, true});
    cs.push_back({tn + "_odd3",       narrow, {{t, 131}, {t, 7}, {t, 33}},     true,  false, true,  false});
    cs.push_back({tn + "_oproj",      narrow, {{t, 896}},                      false, false, true,  false});
    cs.push_back({tn + "_r2",         narrow, {{t, 2500}},                     true,  true,  false, true});
    cs.push_back({tn + "_r4",         narrow, {{t, 3000}, {t, 1700}},          false, true,  true,  true});
    cs.push_back({tn + "_down",       4864,   {{t, 896}},                      false, false, true,  false});
    cs.push_back({tn + "_wide_odd",   4864,   {{t, 131}, {t, 33}},             true,  true,  true,  true});
    cs.push_back({tn + "_wide_tiny3", 4864,   {{t, 1}, {t, 2}, {t, 3}},        true,  true,  false, false});
    cs.push_back({tn + "_n3584",      3584,   {{t, 515}, {t, 64}, {t, 63}},    true,  true,  false, true});
    if (legacy) {
      cs.push_back({tn + "_n96",      96,     {{t, 5}, {t, 9}},                true,  true,  true,  true});
      cs.push_back({tn + "_n4000",    4000,   {{t, 77}},                       true,  false, false, true});
    }
  }
  cs.push_back({"Q8_0_n16384", 16384, {{W::Q8_0, 7}}, true, true, true, true});
  cs.push_back({"Q4_K_n16384", 16384, {{W::Q4_K, 5}, {W::Q6_K, 3}}, true, false, true, true});
  cs.push_back({"Q4_0_n16384", 16384, {{W::Q4_0, 9}}, false, false, true, false});  // no norm: L1 prefetch
  // Mixed types in one launch (Q4_K_M files mix them; 896-wide tensors fall back to legacy types).
  cs.push_back({"mixed_legacy_qkv", 896, {{W::Q5_0, 896}, {W::Q8_0, 128}, {W::Q4_1, 128}}, true, true, false, true});
  cs.push_back({"mixed_k_qkv", 4864, {{W::Q4_K, 131}, {W::Q6_K, 64}, {W::Q5_K, 64}}, true, true, true, true});
  cs.push_back({"mixed_stream_and_k", 4864, {{W::Q8_0, 131}, {W::Q4_K, 64}, {W::Q5_0, 33}}, true, true, true, true});
  cs.push_back({"mixed_direct_types", 4864, {{W::Q4_0, 7}, {W::Q4_K, 131}, {W::Q8_0, 33}}, true, true, true, true});
  cs.push_back({"mixed_all_legacy", 896, {{W::Q4_0, 33}, {W::Q5_1, 65}, {W::Q8_0, 2200}}, false, true, true, true});
  return cs;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaMmvqFused, ::testing::ValuesIn(fused_cases()),
                         [](const auto& i) { return i.param.name; });

// ---------------------------------------------------------------- mmvq_swiglu_fused

struct SwigluCase {
  std::string name;
  WeightType type;
  int64_t n_in, n_out;
  bool norm, x_hat_out;
};
void PrintTo(const SwigluCase& c, std::ostream* os) { *os << c.name; }
class CudaMmvqSwigluFused : public ::testing::TestWithParam<SwigluCase> {};

TEST_P(CudaMmvqSwigluFused, EqualsUnfusedChain) {
  MINFER_REQUIRE_GPU();
  const SwigluCase& c = GetParam();
  const uint32_t seed = seed_of(c.name);
  const int64_t n_in = c.n_in, n_out = c.n_out;
  Input in(n_in, seed);
  Mat gate({c.type, n_out}, n_in, seed + 10), up({c.type, n_out}, n_in, seed + 20);

  UnfusedPrologue ref(in, n_in, c.norm);
  auto g_ref = poisoned_floats(n_out), u_ref = poisoned_floats(n_out), y_ref = poisoned_floats(n_out);
  cuda::mmvq(c.type, gate.dw.get(), n_out, n_in, ref.q.get(), nullptr, g_ref.as<float>(), nullptr);
  cuda::mmvq(c.type, up.dw.get(), n_out, n_in, ref.q.get(), nullptr, u_ref.as<float>(), nullptr);
  cuda::swiglu(g_ref.as<float>(), u_ref.as<float>(), y_ref.as<float>(), n_out, nullptr);

  auto dxh = poisoned_floats(n_in);
  auto g = poisoned_floats(n_out), u = poisoned_floats(n_out), y = poisoned_floats(n_out);
  auto run = [&](float* x_hat_out) {
    cuda::mmvq_swiglu_fused(in.dx.as<float>(), n_in, c.norm ? in.dnorm.as<float>() : nullptr, kEps, x_hat_out, c.type,
                            gate.dw.get(), up.dw.get(), n_out, g.as<float>(), u.as<float>(), y.as<float>(), nullptr);
  };
  run(c.x_hat_out ? dxh.as<float>() : nullptr);
  const auto got_g = host_floats(g, n_out), got_u = host_floats(u, n_out), got_y = host_floats(y, n_out);

  bool x_hat_equal = true;
  std::vector<float> x_hat = in.x;
  if (c.x_hat_out || c.norm) {
    if (!c.x_hat_out) run(dxh.as<float>());  // deterministic: rewrites the same gate/up/y
    x_hat = host_floats(dxh, n_in);
    x_hat_equal = check_x_hat(x_hat, c.norm ? host_floats(ref.xh, n_in) : in.x, c.name);
  }
  UnfusedPrologue same(x_hat_equal ? ref.x_hat : dxh.as<float>(), n_in);
  auto g_same = poisoned_floats(n_out), u_same = poisoned_floats(n_out), y_same = poisoned_floats(n_out);
  cuda::mmvq(c.type, gate.dw.get(), n_out, n_in, same.q.get(), nullptr, g_same.as<float>(), nullptr);
  cuda::mmvq(c.type, up.dw.get(), n_out, n_in, same.q.get(), nullptr, u_same.as<float>(), nullptr);
  expect_bit_equal(got_g, host_floats(g_same, n_out), c.name + ": gate vs mmvq of the same x_hat");
  expect_bit_equal(got_u, host_floats(u_same, n_out), c.name + ": up vs mmvq of the same x_hat");
  // silu(gate) * up from the fused gate/up with the unfused elementwise launcher.
  cuda::swiglu(g.as<float>(), u.as<float>(), y_same.as<float>(), n_out, nullptr);
  expect_bit_equal(got_y, host_floats(y_same, n_out), c.name + ": y vs swiglu of the fused gate, up");
  if (x_hat_equal) {
    expect_bit_equal(got_g, host_floats(g_ref, n_out), c.name + ": gate vs the unfused chain");
    expect_bit_equal(got_u, host_floats(u_ref, n_out), c.name + ": up vs the unfused chain");
    expect_bit_equal(got_y, host_floats(y_ref, n_out), c.name + ": y vs the unfused chain");
  } else {
    expect_close_to_unfused(c.type, gate.w, n_out, n_in, x_hat, nullptr, got_g, host_floats(g_ref, n_out),
                            c.name + ": gate vs the unfused chain");
    expect_close_to_unfused(c.type, up.w, n_out, n_in, x_hat, nullptr, got_u, host_floats(u_ref, n_out),
                            c.name + ": up vs the unfused chain");
  }

  // y's Q8_1 copy (n_out in whole 32-row blocks): quantize_q8_1's bytes of the same y, written in
  // the launch when it streams (a block by the warp that completes it), twice: the block counters
  // must be left at zero for the next launch.
  if (n_out % 32 != 0) return;
  const size_t q_bytes = static_cast<size_t>(n_out / 32) * 36, n_blocks = static_cast<size_t>(n_out / 32);
  auto yq_ref = poisoned(q_bytes);
  cuda::quantize_q8_1(y.as<float>(), 1, n_out, yq_ref.get(), nullptr);
  const auto want = to_host<uint8_t>(yq_ref, q_bytes);
  auto tickets = to_device(std::vector<uint32_t>(n_blocks, 0u), "Q8_1 block counters");
  for (int rep = 0; rep < 2; ++rep) {
    SCOPED_TRACE("Q8_1 copy, launch " + std::to_string(rep));
    auto yq = poisoned(q_bytes);
    cuda::mmvq_swiglu_fused(in.dx.as<float>(), n_in, c.norm ? in.dnorm.as<float>() : nullptr, kEps, nullptr, c.type,
                            gate.dw.get(), up.dw.get(), n_out, g.as<float>(), u.as<float>(), y.as<float>(), nullptr,
                            yq.get(), tickets.as<unsigned int>());
    EXPECT_EQ(host_floats(y, n_out), got_y) << c.name << ": y with the Q8_1 copy";
    const auto got_q = to_host<uint8_t>(yq, q_bytes);
    EXPECT_EQ(std::memcmp(got_q.data(), want.data(), q_bytes), 0) << c.name << ": Q8_1 copy vs quantize_q8_1 of y";
    EXPECT_EQ(to_host<uint32_t>(tickets, n_blocks), std::vector<uint32_t>(n_blocks, 0u)) << c.name << ": counters";
  }
}

std::vector<SwigluCase> swiglu_cases() {
  std::vector<SwigluCase> cs;
  for (WeightType t : kQuantTypes) {
    const bool legacy = info(t).block_elems == QK;
    const int64_t narrow = legacy ? 896 : 768;
    const std::string tn = name(t);
    cs.push_back({tn + "_ffn", t, narrow, 4864, true, true});      // Qwen2-0.5B gate/up: R = 4
    cs.push_back({tn + "_r2", t, narrow, 2500, true, false});      // R = 2
    cs.push_back({tn + "_odd", t, narrow, 131, false, false});     // R = 1, partial tile
    cs.push_back({tn + "_wide", t, 4864, 896, true, true});        // four warps per row, R = 2
    cs.push_back({tn + "_wide_odd", t, 4864, 131, false, true});   // four warps per row, R = 1
    cs.push_back({tn + "_n3584", t, 3584, 1001, true, false});     // Qwen2.5-7B width, streamed
    cs.push_back({tn + "_n3584_q8", t, 3584, 4096, true, false});  // streamed, 128 blocks of Q8_1 out
    if (legacy) cs.push_back({tn + "_n96", t, 96, 37, true, true});
  }
  return cs;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaMmvqSwigluFused, ::testing::ValuesIn(swiglu_cases()),
                         [](const auto& i) { return i.param.name; });

// ---------------------------------------------------------------- a captured layer, replayed

// One Qwen2-0.5B-shaped MLP/attention projection set (narrower FFN to keep the host weights
// small): q/k/v from norm(x) with biases, gate/up/SwiGLU from norm2(x), down + residual.
TEST(CudaMmvqFusedGraph, ReplayFollowsNewInputs) {
  MINFER_REQUIRE_GPU();
  const int64_t d = 896, ff = 4864;
  const WeightType t = WeightType::Q4_0;
  Mat q({t, 896}, d, 11), k({t, 128}, d, 21), v({WeightType::Q8_0, 128}, d, 31);
  Mat wg({t, ff}, d, 41), wu({t, ff}, d, 51), wd({WeightType::Q6_K, d}, ff, 61);
  Input in(d, 71);
  auto xh = poisoned_floats(d), xh2 = poisoned_floats(d);
  auto yq = poisoned_floats(896), yk = poisoned_floats(128), yv = poisoned_floats(128);
  auto g = poisoned_floats(ff), u = poisoned_floats(ff), act = poisoned_floats(ff);
  auto yd = poisoned_floats(d), hres = poisoned_floats(d);
  const cuda::FusedMatvecOut qkv[3] = {
      {t, q.dw.get(), 896, q.dbias.as<float>(), yq.as<float>(), nullptr, nullptr},
      {t, k.dw.get(), 128, k.dbias.as<float>(), yk.as<float>(), nullptr, nullptr},
      {WeightType::Q8_0, v.dw.get(), 128, v.dbias.as<float>(), yv.as<float>(), nullptr, nullptr}};
  const cuda::FusedMatvecOut down = {WeightType::Q6_K, wd.dw.get(), d, nullptr, yd.as<float>(), in.dx.as<float>(),
                                     hres.as<float>()};
  auto enqueue = [&](cudaStream_t s) {
    cuda::mmvq_fused(in.dx.as<float>(), d, in.dnorm.as<float>(), kEps, xh.as<float>(), qkv, 3, s);
    cuda::mmvq_swiglu_fused(in.dx.as<float>(), d, in.dnorm.as<float>(), kEps, xh2.as<float>(), t, wg.dw.get(),
                            wu.dw.get(), ff, g.as<float>(), u.as<float>(), act.as<float>(), s);
    cuda::mmvq_fused(act.as<float>(), ff, nullptr, kEps, nullptr, &down, 1, s);
  };
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  enqueue(s);
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  for (uint32_t round = 0; round < 3; ++round) {
    const std::string what = "graph replay " + std::to_string(round);
    if (round > 0) {  // new activations in the same buffer (round 2 also scales them: other Q8_1 scales)
      auto x = random_floats(static_cast<size_t>(d), 1000 + round, round == 2 ? 40.0f : 1.0f);
      in.x = x;
      CUDA_CHECK(cudaMemcpyAsync(in.dx.get(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    }
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    cuda::sync_bounded(s, "fused layer graph");

    // The eager unfused chain on the same inputs.
    UnfusedPrologue ref(in, d, true);
    auto rq = poisoned_floats(896), rk = poisoned_floats(128), rv = poisoned_floats(128);
    cuda::mmvq(t, q.dw.get(), 896, d, ref.q.get(), q.dbias.as<float>(), rq.as<float>(), nullptr);
    cuda::mmvq(t, k.dw.get(), 128, d, ref.q.get(), k.dbias.as<float>(), rk.as<float>(), nullptr);
    cuda::mmvq(WeightType::Q8_0, v.dw.get(), 128, d, ref.q.get(), v.dbias.as<float>(), rv.as<float>(), nullptr);
    auto rg = poisoned_floats(ff), ru = poisoned_floats(ff), ract = poisoned_floats(ff);
    cuda::mmvq(t, wg.dw.get(), ff, d, ref.q.get(), nullptr, rg.as<float>(), nullptr);
    cuda::mmvq(t, wu.dw.get(), ff, d, ref.q.get(), nullptr, ru.as<float>(), nullptr);
    cuda::swiglu(rg.as<float>(), ru.as<float>(), ract.as<float>(), ff, nullptr);
    auto aq = poisoned(row_bytes(WeightType::Q8_1, ff));
    cuda::quantize_q8_1(ract.as<float>(), 1, ff, aq.get(), nullptr);
    auto rd = poisoned_floats(d), rh = poisoned_floats(d);
    cuda::mmvq(WeightType::Q6_K, wd.dw.get(), d, ff, aq.get(), nullptr, rd.as<float>(), nullptr);
    cuda::add(rd.as<float>(), in.dx.as<float>(), rh.as<float>(), d, nullptr);

    const auto ref_xh = host_floats(ref.xh, d);
    ASSERT_TRUE(check_x_hat(host_floats(xh, d), ref_xh, what + " x_hat (q/k/v)"))
        << "x_hat differs from rms_norm: the bit-exact comparison below does not apply";
    expect_bit_equal(host_floats(xh2, d), ref_xh, what + " x_hat (gate/up)");
    expect_bit_equal(host_floats(yq, 896), host_floats(rq, 896), what + " q");
    expect_bit_equal(host_floats(yk, 128), host_floats(rk, 128), what + " k");
    expect_bit_equal(host_floats(yv, 128), host_floats(rv, 128), what + " v");
    expect_bit_equal(host_floats(g, ff), host_floats(rg, ff), what + " gate");
    expect_bit_equal(host_floats(u, ff), host_floats(ru, ff), what + " up");
    expect_bit_equal(host_floats(act, ff), host_floats(ract, ff), what + " swiglu");
    expect_bit_equal(host_floats(yd, d), host_floats(rd, d), what + " down");
    expect_bit_equal(host_floats(hres, d), host_floats(rh, d), what + " down + residual");
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(s));
}

// ---------------------------------------------------------------- arguments

TEST(CudaMmvqFusedArgs, BadArgumentsAreErrors) {
  MINFER_REQUIRE_GPU();
  auto buf = poisoned(1 << 20);
  auto* f = buf.as<float>();
  float* x = f;             // [0, 16384) floats
  float* y = f + 65536;     // elsewhere
  float* xh = f + 131072;
  const void* w = buf.get();
  const auto one = [&](WeightType t, const void* wp, int64_t n_out, float* yp) {
    return cuda::FusedMatvecOut{t, wp, n_out, nullptr, yp, nullptr, nullptr};
  };
  const cuda::FusedMatvecOut ok = one(WeightType::Q8_0, w, 4, y);
  EXPECT_NO_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, xh, &ok, 1, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  const cuda::FusedMatvecOut three[3] = {ok, ok, ok};
  EXPECT_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, xh, three, 0, nullptr), Error);      // no matrices
  const cuda::FusedMatvecOut four[4] = {ok, ok, ok, ok};
  EXPECT_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, xh, four, 4, nullptr), Error);       // more than 3
  const cuda::FusedMatvecOut f16 = one(WeightType::F16, w, 4, y);
  EXPECT_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, xh, &f16, 1, nullptr), Error);       // float weights
  const cuda::FusedMatvecOut k896 = one(WeightType::Q4_K, w, 4, y);
  EXPECT_THROW(cuda::mmvq_fused(x, 896, nullptr, kEps, xh, &k896, 1, nullptr), Error);     // 896 % 256
  EXPECT_THROW(cuda::mmvq_fused(x, 40, nullptr, kEps, xh, &ok, 1, nullptr), Error);        // 40 % 32
  EXPECT_THROW(cuda::mmvq_fused(x, 16416, nullptr, kEps, xh, &ok, 1, nullptr), Error);     // > 16384
  EXPECT_THROW(cuda::mmvq_fused(x + 1, 64, nullptr, kEps, xh, &ok, 1, nullptr), Error);    // x misaligned
  EXPECT_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, x + 32, &ok, 1, nullptr), Error);    // x_hat_out overlaps x
  const cuda::FusedMatvecOut over = one(WeightType::Q8_0, w, 4, x + 8);
  EXPECT_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, xh, &over, 1, nullptr), Error);      // y overlaps x
  cuda::FusedMatvecOut half_res = ok;
  half_res.residual = y + 100;
  EXPECT_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, xh, &half_res, 1, nullptr), Error);  // residual, no output
  const cuda::FusedMatvecOut misw = one(WeightType::Q8_0, static_cast<const uint8_t*>(w) + 2, 4, y);
  EXPECT_THROW(cuda::mmvq_fused(x, 64, nullptr, kEps, xh, &misw, 1, nullptr), Error);      // weight misaligned
  EXPECT_THROW(cuda::mmvq_swiglu_fused(x, 64, nullptr, kEps, xh, WeightType::BF16, w, w, 4, y, y + 8, y + 16, nullptr),
               Error);
  EXPECT_THROW(cuda::mmvq_swiglu_fused(x, 64, nullptr, kEps, xh, WeightType::Q8_0, w, w, 4, nullptr, y + 8, y + 16,
                                       nullptr),
               Error);
  EXPECT_THROW(cuda::mmvq_swiglu_fused(x, 64, nullptr, kEps, xh, WeightType::Q8_0, w, w, 4, y, y + 8, x + 4, nullptr),
               Error);  // y overlaps x
  auto* counters = reinterpret_cast<unsigned int*>(f + 200000);
  EXPECT_THROW(cuda::mmvq_swiglu_fused(x, 64, nullptr, kEps, xh, WeightType::Q8_0, w, w, 4, y, y + 8, y + 16, nullptr,
                                       f + 300000, counters),
               Error);  // a Q8_1 copy of 4 rows (not whole 32-row blocks)
  EXPECT_THROW(cuda::mmvq_swiglu_fused(x, 64, nullptr, kEps, xh, WeightType::Q8_0, w, w, 32, y, y + 64, y + 128,
                                       nullptr, f + 300000, nullptr),
               Error);  // a Q8_1 copy without counters
}

}  // namespace
