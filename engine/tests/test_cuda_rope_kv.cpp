// The fused decode [QK-norm +] RoPE + KV-cache write (engine/cuda/rope_kv.cu) against its unfused
// reference: [head_rms_norm(q), head_rms_norm(k)], rope_neox / rope_normal of q and k (with the
// same frequency divisors), kv_store(k_rope, v) with the existing launchers, on the GPU.
// Tolerance: exact (bit for bit): the norm, the cos/sin table and the rotation are the same
// device code (head_norm.cuh, rope_device.cuh), and the cache rows are copies.
// Shapes: Qwen2-0.5B (14/2 heads, head_dim 64), 16/8 x 128 (Qwen3-0.6B), 32/8 x 64 (Llama
// 3.2-1B), MHA 5/5 x 200, odd head_dim 2 and 6, the largest head_dim 256; positions 0, 3, 700,
// n_ctx - 1, and outside the cache (-1, n_ctx, far beyond: rotated, no cache row written). The
// caches start full of random "old" values, so any write to a row other than the position's
// shows. Variants: NeoX (qwen2), normal layout (llama), frequency divisors (rope_freqs, Llama
// 3.1 scaling), the QK-norm prologue (qwen3), and combinations. Also in place (q_rope = q,
// k_rope = k), a captured CUDA graph replayed at positions 3 then 700 (n_ctx 1024) with new
// q/k/v each time, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/head_rms_norm.h"
#include "cuda/kv_cache.h"
#include "cuda/rope.h"
#include "cuda/rope_kv.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

struct Heads {
  int64_t n_head, n_head_kv, head_dim;
  double base;
};

// What the fused launch does besides the NeoX rotation (all off: the qwen2 form).
struct Variant {
  RopeMode mode = RopeMode::NeoX;
  bool divisors = false;  // rope_freqs
  bool norm = false;      // qwen3's QK-norm
};

std::string variant_name(const Variant& v) {
  return std::string(v.mode == RopeMode::NeoX ? "neox" : "normal") + (v.divisors ? "+divisors" : "") +
         (v.norm ? "+qk_norm" : "");
}

constexpr float kEps = 1e-6f;

size_t count_bit_diffs(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  EXPECT_EQ(a.size(), b.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " got " << a[i] << " want " << b[i];
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size() << " elements differ";
  return bad;
}

// One token's q/k/v and a pair of caches for the fused and the reference path, starting equal.
struct Token {
  Heads h;
  Variant var;
  int64_t n_ctx, nq, nkv;
  std::vector<float> q, k, v;
  cuda::DeviceBuffer dq, dk, dv, dpos;
  cuda::DeviceBuffer kc, vc, kc_ref, vc_ref;  // fused, reference
  cuda::DeviceBuffer div, qw, kw;             // frequency divisors [head_dim/2], q/k norm weights [head_dim]
  Token(const Heads& hd, int64_t ctx, uint32_t seed, Variant vr = {})
      : h(hd), var(vr), n_ctx(ctx), nq(hd.n_head * hd.head_dim), nkv(hd.n_head_kv * hd.head_dim) {
    set_qkv(seed);
    dpos = to_device(std::vector<int32_t>{0}, "position");
    const auto kc0 = random_floats(static_cast<size_t>(n_ctx * nkv), seed + 7);
    const auto vc0 = random_floats(static_cast<size_t>(n_ctx * nkv), seed + 8);
    kc = to_device(kc0), vc = to_device(vc0), kc_ref = to_device(kc0), vc_ref = to_device(vc0);
    // Divisors in [1, 8] (Llama 3.1's range); norm weights around 1 (as trained norms are).
    std::vector<float> d = random_floats(static_cast<size_t>(h.head_dim / 2), seed + 9, 1.0f);
    for (auto& x : d) x = 1.0f + 7.0f * std::fabs(std::tanh(x));
    std::vector<float> a = random_floats(static_cast<size_t>(h.head_dim), seed + 10, 0.3f);
    std::vector<float> b = random_floats(static_cast<size_t>(h.head_dim), seed + 11, 0.3f);
    for (auto& x : a) x += 1.0f;
    for (auto& x : b) x += 1.0f;
    div = to_device(d, "divisors"), qw = to_device(a, "q norm"), kw = to_device(b, "k norm");
  }
  const float* divisors() const { return var.divisors ? div.as<float>() : nullptr; }
  void set_qkv(uint32_t seed) {
    q = random_floats(static_cast<size_t>(nq), seed);
    k = random_floats(static_cast<size_t>(nkv), seed + 1);
    v = random_floats(static_cast<size_t>(nkv), seed + 2);
    if (!dq.get()) {
      dq = to_device(q), dk = to_device(k), dv = to_device(v);
    } else {
      CUDA_CHECK(cudaDeviceSynchronize());
      CUDA_CHECK(cudaMemcpy(dq.get(), q.data(), q.size() * sizeof(float), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(dk.get(), k.data(), k.size() * sizeof(float), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(dv.get(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  void set_pos(int32_t p) {
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(dpos.get(), &p, sizeof(p), cudaMemcpyHostToDevice));
  }
  // The unfused reference: [head_rms_norm of q and k], rope_neox / rope_normal of q and k,
  // kv_store of k_rope and v into the ref caches. q_normed / k_normed: used with the norm.
  void reference(cuda::DeviceBuffer& q_rope, cuda::DeviceBuffer& k_rope, cuda::DeviceBuffer* q_normed = nullptr,
                 cuda::DeviceBuffer* k_normed = nullptr) {
    const float *qin = dq.as<float>(), *kin = dk.as<float>();
    if (var.norm) {
      cuda::head_rms_norm(qin, qw.as<float>(), q_normed->as<float>(), 1, h.n_head, h.head_dim, kEps, nullptr);
      cuda::head_rms_norm(kin, kw.as<float>(), k_normed->as<float>(), 1, h.n_head_kv, h.head_dim, kEps, nullptr);
      qin = q_normed->as<float>(), kin = k_normed->as<float>();
    }
    const auto rope = var.mode == RopeMode::NeoX ? cuda::rope_neox : cuda::rope_normal;
    rope(qin, dpos.as<int32_t>(), q_rope.as<float>(), 1, h.n_head, h.head_dim, h.base, nullptr, divisors());
    rope(kin, dpos.as<int32_t>(), k_rope.as<float>(), 1, h.n_head_kv, h.head_dim, h.base, nullptr, divisors());
    cuda::kv_store(k_rope.as<float>(), dv.as<float>(), dpos.as<int32_t>(), 1, nkv, kc_ref.as<float>(),
                   vc_ref.as<float>(), n_ctx, nullptr);
  }
  // The plain form (the positional launcher) when the variant is; else the struct.
  void fused(float* q_rope, float* k_rope, cudaStream_t s, float* q_normed = nullptr, float* k_normed = nullptr,
             const float* q = nullptr, const float* k = nullptr) {
    if (!q) q = dq.as<float>();
    if (!k) k = dk.as<float>();
    if (!var.norm && !var.divisors && var.mode == RopeMode::NeoX) {
      cuda::rope_kv_store(q, k, dv.as<float>(), dpos.as<int32_t>(), h.n_head, h.n_head_kv, h.head_dim, h.base, q_rope,
                          k_rope, kc.as<float>(), vc.as<float>(), n_ctx, s);
      return;
    }
    cuda::RopeKvStore a;
    a.q = q, a.k = k, a.v = dv.as<float>(), a.pos = dpos.as<int32_t>();
    a.n_head = h.n_head, a.n_head_kv = h.n_head_kv, a.head_dim = h.head_dim, a.base = h.base;
    a.mode = var.mode;
    a.freq_divisors = divisors();
    if (var.norm) {
      a.q_norm_w = qw.as<float>(), a.k_norm_w = kw.as<float>(), a.eps = kEps;
      a.q_normed = q_normed, a.k_normed = k_normed;
    }
    a.q_rope = q_rope, a.k_rope = k_rope, a.k_cache = kc.as<float>(), a.v_cache = vc.as<float>(), a.n_ctx = n_ctx;
    cuda::rope_kv_store(a, s);
  }
  void expect_caches_equal(const std::string& what) {
    const size_t n = static_cast<size_t>(n_ctx * nkv);
    count_bit_diffs(to_host<float>(kc, n), to_host<float>(kc_ref, n), what + ": k cache");
    count_bit_diffs(to_host<float>(vc, n), to_host<float>(vc_ref, n), what + ": v cache");
  }
};

const Heads kHeads[] = {{14, 2, 64, 1e6}, {16, 8, 128, 1e6}, {5, 5, 200, 1e4}, {3, 1, 2, 1e4},
                        {7, 7, 6, 1e4},   {4, 2, 256, 1e6},  {28, 4, 128, 1e6}, {32, 8, 64, 5e5}};

// Every variant but the plain NeoX one (the tests above it cover that).
const Variant kVariants[] = {{RopeMode::Normal, false, false}, {RopeMode::NeoX, true, false},
                             {RopeMode::Normal, true, false},  {RopeMode::NeoX, false, true},
                             {RopeMode::Normal, true, true}};

std::string label(const Heads& h, int32_t p) {
  return "heads " + std::to_string(h.n_head) + "/" + std::to_string(h.n_head_kv) + " x " +
         std::to_string(h.head_dim) + " pos " + std::to_string(p);
}

TEST(CudaRopeKv, EqualsRopeThenKvStore) {
  MINFER_REQUIRE_GPU();
  const int64_t n_ctx = 1024;
  uint32_t seed = 10;
  for (const Heads& h : kHeads) {
    Token t(h, n_ctx, seed += 10);
    for (int32_t p : {0, 3, 700, 1023, -1, 1024, 1 << 20}) {
      const std::string what = label(h, p);
      t.set_qkv(seed + static_cast<uint32_t>(p & 0xFFFF));
      t.set_pos(p);
      auto qr_ref = poisoned(static_cast<size_t>(t.nq) * 4), kr_ref = poisoned(static_cast<size_t>(t.nkv) * 4);
      auto qr = poisoned(static_cast<size_t>(t.nq) * 4), kr = poisoned(static_cast<size_t>(t.nkv) * 4);
      t.reference(qr_ref, kr_ref);
      t.fused(qr.as<float>(), kr.as<float>(), nullptr);
      count_bit_diffs(to_host<float>(qr, static_cast<size_t>(t.nq)), to_host<float>(qr_ref, static_cast<size_t>(t.nq)),
                      what + ": q_rope");
      count_bit_diffs(to_host<float>(kr, static_cast<size_t>(t.nkv)),
                      to_host<float>(kr_ref, static_cast<size_t>(t.nkv)), what + ": k_rope");
      t.expect_caches_equal(what);  // also: rows other than p (and every row for p outside) unchanged
    }
  }
}

TEST(CudaRopeKv, InPlace) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 500;
  for (const Heads& h : kHeads) {
    Token t(h, 64, seed += 10);
    t.set_pos(37);
    auto qr_ref = poisoned(static_cast<size_t>(t.nq) * 4), kr_ref = poisoned(static_cast<size_t>(t.nkv) * 4);
    t.reference(qr_ref, kr_ref);
    auto qin = to_device(t.q), kin = to_device(t.k);  // rotated in place: q_rope = q, k_rope = k
    cuda::rope_kv_store(qin.as<float>(), kin.as<float>(), t.dv.as<float>(), t.dpos.as<int32_t>(), h.n_head, h.n_head_kv,
                        h.head_dim, h.base, qin.as<float>(), kin.as<float>(), t.kc.as<float>(), t.vc.as<float>(),
                        t.n_ctx, nullptr);
    const std::string what = label(h, 37) + " in place";
    count_bit_diffs(to_host<float>(qin, static_cast<size_t>(t.nq)), to_host<float>(qr_ref, static_cast<size_t>(t.nq)),
                    what + ": q_rope");
    count_bit_diffs(to_host<float>(kin, static_cast<size_t>(t.nkv)),
                    to_host<float>(kr_ref, static_cast<size_t>(t.nkv)), what + ": k_rope");
    t.expect_caches_equal(what);
  }
}

// Captured once, replayed at positions 3 then 700 (n_ctx 1024) with new q/k/v before each replay:
// the graph reads the position and the inputs from device memory, so it follows both.
TEST(CudaRopeKv, CapturedGraphFollowsDevicePosition) {
  MINFER_REQUIRE_GPU();
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint32_t seed = 900;
  for (const Variant& var : {Variant{}, Variant{RopeMode::Normal, true, true}})
  for (const Heads& h : {Heads{14, 2, 64, 1e6}, Heads{16, 8, 128, 1e6}}) {
    Token t(h, 1024, seed += 10, var);
    auto qr = poisoned(static_cast<size_t>(t.nq) * 4), kr = poisoned(static_cast<size_t>(t.nkv) * 4);
    auto qn = poisoned(static_cast<size_t>(t.nq) * 4), kn = poisoned(static_cast<size_t>(t.nkv) * 4);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    t.fused(qr.as<float>(), kr.as<float>(), s, qn.as<float>(), kn.as<float>());
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int32_t p : {3, 700}) {
      const std::string what = variant_name(var) + " " + label(h, p) + " graph";
      t.set_qkv(seed + static_cast<uint32_t>(p));
      t.set_pos(p);
      CUDA_CHECK(cudaGraphLaunch(exec, s));
      cuda::sync_bounded(s, "rope_kv_store graph");
      auto qr_ref = poisoned(static_cast<size_t>(t.nq) * 4), kr_ref = poisoned(static_cast<size_t>(t.nkv) * 4);
      auto qn_ref = poisoned(static_cast<size_t>(t.nq) * 4), kn_ref = poisoned(static_cast<size_t>(t.nkv) * 4);
      t.reference(qr_ref, kr_ref, &qn_ref, &kn_ref);
      count_bit_diffs(to_host<float>(qr, static_cast<size_t>(t.nq)), to_host<float>(qr_ref, static_cast<size_t>(t.nq)),
                      what + ": q_rope");
      count_bit_diffs(to_host<float>(kr, static_cast<size_t>(t.nkv)),
                      to_host<float>(kr_ref, static_cast<size_t>(t.nkv)), what + ": k_rope");
      if (var.norm) {
        count_bit_diffs(to_host<float>(qn, static_cast<size_t>(t.nq)),
                        to_host<float>(qn_ref, static_cast<size_t>(t.nq)), what + ": q_norm");
        count_bit_diffs(to_host<float>(kn, static_cast<size_t>(t.nkv)),
                        to_host<float>(kn_ref, static_cast<size_t>(t.nkv)), what + ": k_norm");
      }
      t.expect_caches_equal(what);  // after 700: rows 3 and 700 both hold their own step's k/v
    }
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  CUDA_CHECK(cudaStreamDestroy(s));
}

// Each variant (llama's layout, rope_freqs divisors, qwen3's QK-norm, and both) against the
// unfused kernels, every output bit for bit, at positions in and outside the cache.
TEST(CudaRopeKv, VariantsEqualTheUnfusedKernels) {
  MINFER_REQUIRE_GPU();
  const int64_t n_ctx = 1024;
  uint32_t seed = 2000;
  for (const Variant& var : kVariants)
    for (const Heads& h : kHeads) {
      Token t(h, n_ctx, seed += 10, var);
      for (int32_t p : {0, 700, 1023, -1, 1024}) {
        const std::string what = variant_name(var) + " " + label(h, p);
        const size_t nq = static_cast<size_t>(t.nq), nkv = static_cast<size_t>(t.nkv);
        t.set_qkv(seed + static_cast<uint32_t>(p & 0xFFFF));
        t.set_pos(p);
        auto qr_ref = poisoned(nq * 4), kr_ref = poisoned(nkv * 4), qn_ref = poisoned(nq * 4), kn_ref = poisoned(nkv * 4);
        auto qr = poisoned(nq * 4), kr = poisoned(nkv * 4), qn = poisoned(nq * 4), kn = poisoned(nkv * 4);
        t.reference(qr_ref, kr_ref, &qn_ref, &kn_ref);
        t.fused(qr.as<float>(), kr.as<float>(), nullptr, qn.as<float>(), kn.as<float>());
        count_bit_diffs(to_host<float>(qr, nq), to_host<float>(qr_ref, nq), what + ": q_rope");
        count_bit_diffs(to_host<float>(kr, nkv), to_host<float>(kr_ref, nkv), what + ": k_rope");
        if (var.norm) {
          count_bit_diffs(to_host<float>(qn, nq), to_host<float>(qn_ref, nq), what + ": q_norm");
          count_bit_diffs(to_host<float>(kn, nkv), to_host<float>(kn_ref, nkv), what + ": k_norm");
        }
        t.expect_caches_equal(what);
      }
    }
}

// The aliasing the header allows, per variant: q_rope = q and k_rope = k (normed rows to their own
// buffers); with the norm also q_normed = q and k_normed = k (rotated rows to their own buffers).
TEST(CudaRopeKv, VariantsInPlace) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 3000;
  for (const Variant& var : kVariants)
    for (const Heads& h : {Heads{16, 8, 128, 1e6}, Heads{32, 8, 64, 5e5}, Heads{7, 7, 6, 1e4}})
      for (bool norm_in_place : {false, true}) {
        if (norm_in_place && !var.norm) continue;
        Token t(h, 64, seed += 10, var);
        t.set_pos(37);
        const size_t nq = static_cast<size_t>(t.nq), nkv = static_cast<size_t>(t.nkv);
        auto qr_ref = poisoned(nq * 4), kr_ref = poisoned(nkv * 4), qn_ref = poisoned(nq * 4), kn_ref = poisoned(nkv * 4);
        t.reference(qr_ref, kr_ref, &qn_ref, &kn_ref);
        auto qin = to_device(t.q), kin = to_device(t.k);
        auto qo = poisoned(nq * 4), ko = poisoned(nkv * 4);  // the outputs that do not alias
        const std::string what = variant_name(var) + " " + label(h, 37) + (norm_in_place ? " norm in place" : " rope in place");
        if (!norm_in_place) {
          t.fused(qin.as<float>(), kin.as<float>(), nullptr, qo.as<float>(), ko.as<float>(), qin.as<float>(), kin.as<float>());
          count_bit_diffs(to_host<float>(qin, nq), to_host<float>(qr_ref, nq), what + ": q_rope");
          count_bit_diffs(to_host<float>(kin, nkv), to_host<float>(kr_ref, nkv), what + ": k_rope");
          if (var.norm) {
            count_bit_diffs(to_host<float>(qo, nq), to_host<float>(qn_ref, nq), what + ": q_norm");
            count_bit_diffs(to_host<float>(ko, nkv), to_host<float>(kn_ref, nkv), what + ": k_norm");
          }
        } else {
          t.fused(qo.as<float>(), ko.as<float>(), nullptr, qin.as<float>(), kin.as<float>(), qin.as<float>(), kin.as<float>());
          count_bit_diffs(to_host<float>(qo, nq), to_host<float>(qr_ref, nq), what + ": q_rope");
          count_bit_diffs(to_host<float>(ko, nkv), to_host<float>(kr_ref, nkv), what + ": k_rope");
          count_bit_diffs(to_host<float>(qin, nq), to_host<float>(qn_ref, nq), what + ": q_norm");
          count_bit_diffs(to_host<float>(kin, nkv), to_host<float>(kn_ref, nkv), what + ": k_norm");
        }
        t.expect_caches_equal(what);
      }
}

TEST(CudaRopeKv, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(1 << 16);
  float* f = d.as<float>();
  const int32_t* p = d.as<int32_t>();
  auto call = [&](int64_t nh, int64_t nkv, int64_t hd, double base, int64_t n_ctx, float* kc) {
    cuda::rope_kv_store(f, f, f, p, nh, nkv, hd, base, f + 1024, f + 2048, kc, f + 8192, n_ctx, nullptr);
  };
  for (auto bad : {std::function<void()>([&] { call(14, 2, 65, 1e6, 16, f + 4096); }),   // odd head_dim
                   std::function<void()>([&] { call(14, 2, 258, 1e6, 16, f + 4096); }),  // head_dim > 256
                   std::function<void()>([&] { call(0, 2, 64, 1e6, 16, f + 4096); }),    // no heads
                   std::function<void()>([&] { call(14, 2, 64, 0.0, 16, f + 4096); }),   // base
                   std::function<void()>([&] { call(14, 2, 64, 1e6, 0, f + 4096); }),    // no cache
                   std::function<void()>([&] { call(14, 2, 64, 1e6, 16, nullptr); }),    // null cache
                   std::function<void()>([&] {  // a QK-norm weight without the other and the outputs
                     cuda::RopeKvStore a;
                     a.q = a.k = a.v = f, a.pos = p, a.n_head = 4, a.n_head_kv = 2, a.head_dim = 64, a.base = 1e6;
                     a.q_norm_w = f, a.eps = 1e-6f;
                     a.q_rope = f + 1024, a.k_rope = f + 2048, a.k_cache = f + 4096, a.v_cache = f + 8192, a.n_ctx = 16;
                     cuda::rope_kv_store(a, nullptr);
                   })}) {
    try {
      bad();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rope_kv_store"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
