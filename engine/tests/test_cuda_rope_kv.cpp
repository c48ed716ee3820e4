// The fused decode RoPE + KV-cache write (engine/cuda/rope_kv.cu) against its unfused reference:
// rope_neox(q), rope_neox(k), kv_store(k_rope, v) with the existing launchers, on the GPU.
// Tolerance: exact (bit for bit): the cos/sin table is computed with rope.cu's double expressions
// and the rotation is written the same way, and the cache rows are copies.
// Shapes: Qwen2-0.5B (14/2 heads, head_dim 64), 16/8 x 128, MHA 5/5 x 200, odd head_dim 2 and 6,
// the largest head_dim 256; positions 0, 3, 700, n_ctx - 1, and outside the cache (-1, n_ctx,
// far beyond: rotated, no cache row written). The caches start full of random "old" values, so
// any write to a row other than the position's shows. Also in place (q_rope = q, k_rope = k), a
// captured CUDA graph replayed at positions 3 then 700 (n_ctx 1024) with new q/k/v each time, and
// bad arguments.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
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
  int64_t n_ctx, nq, nkv;
  std::vector<float> q, k, v;
  cuda::DeviceBuffer dq, dk, dv, dpos;
  cuda::DeviceBuffer kc, vc, kc_ref, vc_ref;  // fused, reference
  Token(const Heads& hd, int64_t ctx, uint32_t seed)
      : h(hd), n_ctx(ctx), nq(hd.n_head * hd.head_dim), nkv(hd.n_head_kv * hd.head_dim) {
    set_qkv(seed);
    dpos = to_device(std::vector<int32_t>{0}, "position");
    const auto kc0 = random_floats(static_cast<size_t>(n_ctx * nkv), seed + 7);
    const auto vc0 = random_floats(static_cast<size_t>(n_ctx * nkv), seed + 8);
    kc = to_device(kc0), vc = to_device(vc0), kc_ref = to_device(kc0), vc_ref = to_device(vc0);
  }
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
  // The unfused reference: rope_neox of q and k, kv_store of k_rope and v into the ref caches.
  void reference(cuda::DeviceBuffer& q_rope, cuda::DeviceBuffer& k_rope) {
    cuda::rope_neox(dq.as<float>(), dpos.as<int32_t>(), q_rope.as<float>(), 1, h.n_head, h.head_dim, h.base, nullptr);
    cuda::rope_neox(dk.as<float>(), dpos.as<int32_t>(), k_rope.as<float>(), 1, h.n_head_kv, h.head_dim, h.base, nullptr);
    cuda::kv_store(k_rope.as<float>(), dv.as<float>(), dpos.as<int32_t>(), 1, nkv, kc_ref.as<float>(),
                   vc_ref.as<float>(), n_ctx, nullptr);
  }
  void fused(float* q_rope, float* k_rope, cudaStream_t s) {
    cuda::rope_kv_store(dq.as<float>(), dk.as<float>(), dv.as<float>(), dpos.as<int32_t>(), h.n_head, h.n_head_kv,
                        h.head_dim, h.base, q_rope, k_rope, kc.as<float>(), vc.as<float>(), n_ctx, s);
  }
  void expect_caches_equal(const std::string& what) {
    const size_t n = static_cast<size_t>(n_ctx * nkv);
    count_bit_diffs(to_host<float>(kc, n), to_host<float>(kc_ref, n), what + ": k cache");
    count_bit_diffs(to_host<float>(vc, n), to_host<float>(vc_ref, n), what + ": v cache");
  }
};

const Heads kHeads[] = {{14, 2, 64, 1e6}, {16, 8, 128, 1e6}, {5, 5, 200, 1e4}, {3, 1, 2, 1e4},
                        {7, 7, 6, 1e4},   {4, 2, 256, 1e6},  {28, 4, 128, 1e6}};

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
  for (const Heads& h : {Heads{14, 2, 64, 1e6}, Heads{16, 8, 128, 1e6}}) {
    Token t(h, 1024, seed += 10);
    auto qr = poisoned(static_cast<size_t>(t.nq) * 4), kr = poisoned(static_cast<size_t>(t.nkv) * 4);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    t.fused(qr.as<float>(), kr.as<float>(), s);
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int32_t p : {3, 700}) {
      const std::string what = label(h, p) + " graph";
      t.set_qkv(seed + static_cast<uint32_t>(p));
      t.set_pos(p);
      CUDA_CHECK(cudaGraphLaunch(exec, s));
      cuda::sync_bounded(s, "rope_kv_store graph");
      auto qr_ref = poisoned(static_cast<size_t>(t.nq) * 4), kr_ref = poisoned(static_cast<size_t>(t.nkv) * 4);
      t.reference(qr_ref, kr_ref);
      count_bit_diffs(to_host<float>(qr, static_cast<size_t>(t.nq)), to_host<float>(qr_ref, static_cast<size_t>(t.nq)),
                      what + ": q_rope");
      count_bit_diffs(to_host<float>(kr, static_cast<size_t>(t.nkv)),
                      to_host<float>(kr_ref, static_cast<size_t>(t.nkv)), what + ": k_rope");
      t.expect_caches_equal(what);  // after 700: rows 3 and 700 both hold their own step's k/v
    }
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  CUDA_CHECK(cudaStreamDestroy(s));
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
                   std::function<void()>([&] { call(14, 2, 64, 1e6, 16, nullptr); })}) { // null cache
    try {
      bad();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rope_kv_store"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
