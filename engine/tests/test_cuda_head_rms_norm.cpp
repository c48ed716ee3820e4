// GPU per-head RMSNorm (engine/cuda/head_rms_norm.cu, qwen3's attn_q_norm / attn_k_norm) against
// cpu::head_rms_norm on random rows (never zeros) with a planted outlier per head: Qwen3-0.6B's
// q (16 x 128) and k (8 x 128), the qwen3-tiny preset's 4 x 32, head_dim not a multiple of 32
// (6, 40, 100) and 256, one row (decode) and up to 300 rows (a prefill, more warps than one CTA
// holds); weights around 1 as trained norms are; in place; bad arguments.
// Tolerance: every element within 1e-6 relative of the CPU result: both sides sum the squares in
// double (in another order), so the head's float scale agrees to the last bit in practice and the
// two f32 multiplies are the same.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/ops.h"
#include "cuda/head_rms_norm.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

constexpr double kRel = 1e-6;

struct Shape {
  int64_t rows, n_heads, head_dim;
};

std::string label(const Shape& s) {
  return "head_rms_norm " + std::to_string(s.rows) + " rows x " + std::to_string(s.n_heads) + " heads x " +
         std::to_string(s.head_dim);
}

struct Data {
  std::vector<float> x, w, want;
};

Data make(const Shape& s, uint32_t seed, float eps) {
  ThreadPool pool(2);
  Data d;
  const size_t n = static_cast<size_t>(s.rows * s.n_heads * s.head_dim);
  d.x = random_floats(n, seed, 2.0f);
  // One outlier channel per head (a different one in each head).
  for (int64_t hr = 0; hr < s.rows * s.n_heads; ++hr)
    d.x[static_cast<size_t>(hr * s.head_dim + hr % s.head_dim)] += 20.0f;
  d.w = random_floats(static_cast<size_t>(s.head_dim), seed + 1, 0.5f);
  for (auto& v : d.w) v += 1.0f;
  d.want.resize(n);
  cpu::head_rms_norm(d.x.data(), d.w.data(), d.want.data(), s.rows, s.n_heads, s.head_dim, eps, pool);
  return d;
}

}  // namespace

TEST(CudaHeadRmsNorm, MatchesCpu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const Shape& s : {Shape{1, 16, 128}, Shape{1, 8, 128}, Shape{9, 16, 128}, Shape{300, 8, 128}, Shape{1, 4, 32},
                         Shape{7, 2, 32}, Shape{5, 3, 6}, Shape{3, 5, 40}, Shape{4, 3, 100}, Shape{2, 2, 256},
                         Shape{1, 1, 1}})
    for (float eps : {1e-6f, 1e-5f}) {
      const Data d = make(s, seed, eps);
      seed += 2;
      auto dx = to_device(d.x), dw = to_device(d.w);
      auto dy = poisoned(d.x.size() * sizeof(float));
      cuda::head_rms_norm(dx.as<float>(), dw.as<float>(), dy.as<float>(), s.rows, s.n_heads, s.head_dim, eps, nullptr);
      minfer::testing::expect_close(to_host<float>(dy, d.x.size()), d.want, kRel, label(s));
    }
}

TEST(CudaHeadRmsNorm, InPlace) {
  MINFER_REQUIRE_GPU();
  for (const Shape& s : {Shape{11, 16, 128}, Shape{3, 5, 40}}) {
    const Data d = make(s, 77, 1e-6f);
    auto dx = to_device(d.x), dw = to_device(d.w);
    cuda::head_rms_norm(dx.as<float>(), dw.as<float>(), dx.as<float>(), s.rows, s.n_heads, s.head_dim, 1e-6f, nullptr);
    minfer::testing::expect_close(to_host<float>(dx, d.x.size()), d.want, kRel, label(s) + " in place");
  }
}

TEST(CudaHeadRmsNorm, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(4096);
  float* f = d.as<float>();
  struct Bad {
    int64_t rows, n_heads, head_dim;
    float eps;
    const float* w;
  };
  for (const Bad& b : {Bad{-1, 2, 32, 1e-6f, f}, Bad{1, 0, 32, 1e-6f, f}, Bad{1, 2, 0, 1e-6f, f},
                       Bad{1, 2, 32, -1.0f, f}, Bad{1, 2, 32, 1e-6f, nullptr}}) {
    try {
      cuda::head_rms_norm(f, b.w, f, b.rows, b.n_heads, b.head_dim, b.eps, nullptr);
      ADD_FAILURE() << "no error for rows=" << b.rows << " heads=" << b.n_heads << " head_dim=" << b.head_dim;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("head_rms_norm"), std::string::npos) << e.what();
    }
  }
}
