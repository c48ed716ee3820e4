// GPU KV-cache write (engine/cuda/kv_cache.cu) against the CPU backend's copy (a host loop here:
// row r of k/v to cache row pos[r]). The caches start full of random "old" values, so the test
// also proves that nothing else is written: rows not addressed keep their old values, and
// positions outside [0, n_ctx) (negative, == n_ctx, far beyond) are skipped.
// Widths: 128 (Qwen2-0.5B: 2 KV heads x 64), 7 (odd: the scalar path), 1024; plus a run with the
// cache pointer offset by one float. Tolerance: exact (a copy).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/kv_cache.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

void check(int64_t n_embd_kv, size_t cache_offset, uint32_t seed) {
  const int64_t n_ctx = 64;
  const std::vector<int32_t> pos = {3, 10, -1, 64, 63, 1000000, 0, 11};
  const int64_t rows = static_cast<int64_t>(pos.size());
  const size_t cache_n = static_cast<size_t>(n_ctx * n_embd_kv);
  const auto k = random_floats(static_cast<size_t>(rows * n_embd_kv), seed);
  const auto v = random_floats(static_cast<size_t>(rows * n_embd_kv), seed + 1);
  auto kc = random_floats(cache_n + cache_offset, seed + 2);
  auto vc = random_floats(cache_n + cache_offset, seed + 3);
  auto dk = to_device(k), dv = to_device(v), dpos = to_device(pos), dkc = to_device(kc), dvc = to_device(vc);

  for (int64_t r = 0; r < rows; ++r) {  // the host reference
    if (pos[r] < 0 || pos[r] >= n_ctx) continue;
    for (int64_t c = 0; c < n_embd_kv; ++c) {
      kc[cache_offset + static_cast<size_t>(pos[r] * n_embd_kv + c)] = k[static_cast<size_t>(r * n_embd_kv + c)];
      vc[cache_offset + static_cast<size_t>(pos[r] * n_embd_kv + c)] = v[static_cast<size_t>(r * n_embd_kv + c)];
    }
  }
  cuda::kv_store(dk.as<float>(), dv.as<float>(), dpos.as<int32_t>(), rows, n_embd_kv, dkc.as<float>() + cache_offset,
                 dvc.as<float>() + cache_offset, n_ctx, nullptr);
  const std::string what = "kv_store n_embd_kv=" + std::to_string(n_embd_kv) + " offset=" + std::to_string(cache_offset);
  EXPECT_EQ(to_host<float>(dkc, kc.size()), kc) << what << " (K)";
  EXPECT_EQ(to_host<float>(dvc, vc.size()), vc) << what << " (V)";
}

}  // namespace

TEST(CudaKvCache, StoresRowsAtDevicePositions) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 1;
  for (int64_t w : {int64_t{128}, int64_t{7}, int64_t{1024}, int64_t{4}})
    for (size_t off : {0, 1}) check(w, off, seed += 10);
}

TEST(CudaKvCache, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(256);
  try {
    cuda::kv_store(d.as<float>(), d.as<float>(), d.as<int32_t>(), 1, 4, d.as<float>(), d.as<float>(), 0, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kv_store"), std::string::npos) << e.what();
  }
}
