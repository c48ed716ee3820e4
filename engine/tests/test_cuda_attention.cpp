// GPU causal GQA attention (engine/cuda/attention.cu, attention_prefill_mma.cu) against cpu::attention.
//   prefill: several head layouts (Qwen2-0.5B's 14/2 x 64, 16/16 x 128, 4/1 x 256, odd
//            head_dim 10 and 6, head_dim 200 > the CTA width), prompts starting at 0 and deep in
//            the context, rows straddling the 128-key chunk boundary, and unordered positions.
//   prefill on tensor cores (head_dim 64 and 128): 14/2 x 64, 16/16 x 128, 28/4 x 128; 1, 15, 64,
//            65, 130 and 512 rows (partial 64-row tiles, one row, several tiles); prompts from 0
//            and from position 300 in a 1024-row cache; unordered positions with a -1 (no key:
//            zero output); one channel per head near 30 in q, k and v in some cases (Qwen-like
//            outliers: peaked softmax, large scores).
//   decode:  max_ctx 1024, positions 0, 1, 37, 127, 128, 255, 1000, 1023, both GQA ratios (and
//            max_ctx 16384 up to position 16383 for the grouped-query kernel's slicing); the
//            same launch replayed at several positions written into the device pos between
//            replays; and the launch captured once into a CUDA graph and replayed at several
//            positions. The scratch starts as NaN, so a combine that read a dead chunk would show.
// Cache rows past the live length hold random values (never zeros), so reading them would show;
// outputs start as NaN, so a row the kernel did not write would show.
// Tolerance: relative L2 error over each output, chosen by the kernel the case takes
// (cuda::attention_prefill_uses_mma: by head_dim, the same rule as the dispatch):
//   f32 kernels (decode; prefill at other head dims): <= 1e-5 (f32 math on both sides; the sums
//            run in a different order, which costs ~1e-7 per element);
//   tensor-core prefill (head_dim 64, 128): <= 3e-3. Q, K, V and the softmax weights are rounded
//            to f16 (2^-11 relative each), the rest is f32; these cases measure 2e-4 .. 8e-4 in a
//            CPU emulation of the kernel (PTX fragment layouts), hence ~4x headroom.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/ops.h"
#include "cuda/attention.h"
#include "cuda/attention_decode_gqa.h"
#include "cuda/device_info.h"
#include "cuda_test_util.h"

using namespace minfer;
using minfer::testing::poisoned;
using minfer::testing::random_floats;
using minfer::testing::rel_l2;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

constexpr double kTol = 1e-5;     // f32 kernels
constexpr double kTolMma = 3e-3;  // tensor-core prefill: f16 inputs (see the header)

struct Heads {
  int64_t n_head, n_head_kv, head_dim;
  std::string str() const {
    return std::to_string(n_head) + "/" + std::to_string(n_head_kv) + " heads x " + std::to_string(head_dim);
  }
};

std::vector<float> cpu_attention(const std::vector<float>& q, const std::vector<int32_t>& pos, const std::vector<float>& kc,
                                 const std::vector<float>& vc, const Heads& h) {
  ThreadPool pool(2);
  std::vector<float> out(q.size());
  cpu::attention(q.data(), pos.data(), kc.data(), vc.data(), out.data(), static_cast<int64_t>(pos.size()), h.n_head,
                 h.n_head_kv, h.head_dim, pool);
  return out;
}

// Sets channel `ch` of every head of every row to about `value` (a massive activation).
void plant_outlier(std::vector<float>& x, int64_t head_dim, int64_t ch, float value) {
  for (size_t i = static_cast<size_t>(ch), j = 0; i < x.size(); i += static_cast<size_t>(head_dim), ++j)
    x[i] = value + 0.1f * static_cast<float>(j % 7);
}

// outlier != 0: q channel 5 ~ outlier, k channel 5 ~ outlier / 2, v channel 7 ~ outlier.
void check_prefill(const Heads& h, const std::vector<int32_t>& pos, int64_t n_ctx, uint32_t seed, float outlier = 0) {
  const int64_t rows = static_cast<int64_t>(pos.size());
  const int64_t q_cols = h.n_head * h.head_dim, kv_cols = h.n_head_kv * h.head_dim;
  auto q = random_floats(static_cast<size_t>(rows * q_cols), seed);
  auto kc = random_floats(static_cast<size_t>(n_ctx * kv_cols), seed + 1);
  auto vc = random_floats(static_cast<size_t>(n_ctx * kv_cols), seed + 2);
  if (outlier != 0) {
    plant_outlier(q, h.head_dim, 5, outlier);
    plant_outlier(kc, h.head_dim, 5, outlier / 2);
    plant_outlier(vc, h.head_dim, 7, outlier);
  }
  const auto want = cpu_attention(q, pos, kc, vc, h);
  auto dq = to_device(q), dpos = to_device(pos), dk = to_device(kc), dv = to_device(vc);
  auto dout = poisoned(want.size() * sizeof(float));
  cuda::attention_prefill(dq.as<float>(), dpos.as<int32_t>(), dk.as<float>(), dv.as<float>(), dout.as<float>(), rows,
                          h.n_head, h.n_head_kv, h.head_dim, nullptr);
  const bool mma = cuda::attention_prefill_uses_mma(h.head_dim);
  const double err = rel_l2(to_host<float>(dout, want.size()), want);
  EXPECT_LE(err, mma ? kTolMma : kTol) << "prefill (" << (mma ? "tensor cores" : "f32") << ") " << h.str()
                                       << " rows=" << rows << " first pos=" << pos[0] << " n_ctx=" << n_ctx
                                       << " outlier=" << outlier;
}

std::vector<int32_t> run_of_positions(int32_t first, int64_t rows) {
  std::vector<int32_t> pos(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) pos[static_cast<size_t>(r)] = first + static_cast<int32_t>(r);
  return pos;
}

// Device state of one decode layer: a full random cache of max_ctx rows, the query, pos, scratch.
struct Decode {
  Heads h;
  int64_t max_ctx;
  std::vector<float> kc, vc, q;
  cuda::DeviceBuffer dk, dv, dq, dpos, dout, scratch, tickets;

  Decode(const Heads& heads, int64_t ctx, uint32_t seed) : h(heads), max_ctx(ctx) {
    const int64_t kv_cols = h.n_head_kv * h.head_dim;
    kc = random_floats(static_cast<size_t>(max_ctx * kv_cols), seed);
    vc = random_floats(static_cast<size_t>(max_ctx * kv_cols), seed + 1);
    q = random_floats(static_cast<size_t>(h.n_head * h.head_dim), seed + 2);
    dk = to_device(kc);
    dv = to_device(vc);
    dq = to_device(q);
    dpos = to_device(std::vector<int32_t>{0});
    dout = poisoned(q.size() * sizeof(float));
    scratch = poisoned(static_cast<size_t>(cuda::attention_decode_scratch_floats(h.n_head, h.head_dim, max_ctx)) *
                       sizeof(float));
    tickets = cuda::DeviceBuffer(static_cast<size_t>(cuda::attention_decode_tickets(h.n_head)) * sizeof(unsigned int),
                                 "merge counters");
    CUDA_CHECK(cudaMemset(tickets.get(), 0, tickets.bytes()));  // zeroed once, as attention.h asks
    CUDA_CHECK(cudaDeviceSynchronize());  // the uploads and poison land before any other stream runs
  }
  void launch(cudaStream_t s) {
    cuda::attention_decode(dq.as<float>(), dpos.as<int32_t>(), dk.as<float>(), dv.as<float>(), dout.as<float>(),
                           h.n_head, h.n_head_kv, h.head_dim, max_ctx, scratch.as<float>(), tickets.as<unsigned int>(), s);
  }
  // Writes the position into device memory and poisons the output (stream-ordered).
  void set_position(int32_t p, cudaStream_t s) {
    CUDA_CHECK(cudaMemcpyAsync(dpos.get(), &p, sizeof(p), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemsetAsync(dout.get(), 0xFF, dout.bytes(), s));
  }
  void expect_matches_cpu(int32_t p, const std::string& how) {
    const auto want = cpu_attention(q, {p}, kc, vc, h);
    const double err = rel_l2(to_host<float>(dout, want.size()), want);
    EXPECT_LE(err, kTol) << how << " decode " << h.str() << " pos=" << p;
  }
};

// 64 and 128 take the unrolled dot (0.5b's and 7B's shapes), 10 the scalar one, 200 the generic
// float4 loop with more dims than threads.
const Heads kDecodeHeads[] = {{14, 2, 64}, {16, 16, 128}, {28, 4, 128}, {6, 3, 10}, {3, 1, 200}};

}  // namespace

TEST(CudaAttention, PrefillMatchesCpu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 1;
  check_prefill({14, 2, 64}, run_of_positions(0, 37), 40, seed += 10);      // a prompt from position 0
  check_prefill({14, 2, 64}, run_of_positions(126, 4), 135, seed += 10);    // 127..130 keys: chunk edge
  check_prefill({16, 16, 128}, run_of_positions(300, 5), 310, seed += 10);  // three chunks per row
  check_prefill({4, 1, 256}, run_of_positions(0, 3), 3, seed += 10);        // head_dim 256
  check_prefill({6, 3, 10}, run_of_positions(0, 9), 12, seed += 10);        // odd head_dim: scalar loads
  check_prefill({2, 2, 6}, run_of_positions(250, 7), 260, seed += 10);
  check_prefill({3, 1, 200}, run_of_positions(129, 3), 140, seed += 10);    // head_dim > 128 threads
  check_prefill({14, 2, 64}, {17, 3, 0, 511, 128, 64}, 600, seed += 10);   // unordered positions
}

// The shape rule of the dispatch: the Qwen2 head dims take the tensor cores, the rest f32.
TEST(CudaAttention, PrefillDispatchByHeadDim) {
  MINFER_REQUIRE_GPU();  // host-only, but every test of this program skips without a GPU (ctest)
  EXPECT_TRUE(cuda::attention_prefill_uses_mma(64));
  EXPECT_TRUE(cuda::attention_prefill_uses_mma(128));
  for (int64_t d : {6, 10, 32, 80, 96, 200, 256}) EXPECT_FALSE(cuda::attention_prefill_uses_mma(d)) << d;
}

TEST(CudaAttention, PrefillTensorCoresMatchCpu) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 500;
  for (int64_t rows : {1, 15, 64, 65, 130, 512}) {
    check_prefill({14, 2, 64}, run_of_positions(0, rows), rows + 5, seed += 10);   // a prompt from position 0
    check_prefill({14, 2, 64}, run_of_positions(300, rows), 1024, seed += 10);     // deep in the context
  }
  check_prefill({14, 2, 64}, run_of_positions(0, 130), 200, seed += 10, 30.f);     // outliers
  check_prefill({14, 2, 64}, run_of_positions(300, 65), 1024, seed += 10, 30.f);
  for (const Heads& h : {Heads{16, 16, 128}, Heads{28, 4, 128}}) {
    for (int64_t rows : {1, 15, 65, 130}) {
      check_prefill(h, run_of_positions(0, rows), rows + 5, seed += 10);
      check_prefill(h, run_of_positions(300, rows), 1024, seed += 10, rows == 65 ? 30.f : 0.f);
    }
  }
  check_prefill({28, 4, 128}, run_of_positions(0, 512), 520, seed += 10, 30.f);
  check_prefill({28, 4, 128}, run_of_positions(300, 512), 1024, seed += 10);

  // Unordered positions (rows of one tile attend different prefixes; the tile's key range is
  // its largest position), a row without keys (-1: zero output) and the cache's last row.
  std::mt19937 rng(7);
  std::vector<int32_t> pos(150);
  for (auto& p : pos) p = static_cast<int32_t>(rng() % 1024);
  pos[7] = -1;
  pos[70] = 1023;
  pos[100] = 0;
  check_prefill({14, 2, 64}, pos, 1024, seed += 10);
  check_prefill({14, 2, 64}, pos, 1024, seed += 10, 30.f);
  check_prefill({28, 4, 128}, pos, 1024, seed += 10);
  check_prefill({16, 16, 128}, {17, 3, 0, -1, 511, 128, 64}, 600, seed += 10);
}

TEST(CudaAttention, DecodeMatchesCpuAtManyPositions) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 100;
  for (const Heads& h : kDecodeHeads) {
    Decode d(h, 1024, seed += 10);
    for (int32_t p : {0, 1, 37, 127, 128, 255, 1000, 1023}) {
      d.set_position(p, nullptr);
      d.launch(nullptr);
      d.expect_matches_cpu(p, "eager");
    }
  }
}

// One launch, replayed with identical arguments: only the device pos changes between replays.
// Long contexts: the grouped-query kernel (attention_decode_gqa.cu) gives a CTA more of a group's
// heads the more chunks are live; on a 132-SM H200 these positions take one head per CTA, uneven
// slices (7 heads as 4 + 3, 3 + 3 + 1) and whole groups, with merges of up to 128 chunks.
TEST(CudaAttention, DecodeLongContextsSplitTheGroupByLength) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 400;
  for (const Heads& h : {Heads{14, 2, 64}, Heads{28, 4, 128}}) {
    Decode d(h, 16384, seed += 10);
    for (int32_t p : {300, 2000, 5000, 9000, 16383}) {
      d.set_position(p, nullptr);
      d.launch(nullptr);
      d.expect_matches_cpu(p, "long context");
    }
  }
}

// Which decode kernel a reserved context gets: the per-head one while no CTA of the grouped-query
// kernel would take two heads (7B at 640 keys: 5 chunks x 4 KV heads x 7 = 140 CTAs of one head
// on 132 SMs), the grouped-query one beyond. The cases above run both (max_ctx 1024: 14/2 per
// head, 28/4 grouped; 16384: grouped).
TEST(CudaAttention, ShortReservedContextsTakeThePerHeadKernel) {
  MINFER_REQUIRE_GPU();
  if (cuda::sm_count() != 132) GTEST_SKIP() << "SKIPPED: the expectations are for a 132-SM GPU (H200)";
  EXPECT_FALSE(cuda::attention_decode_gqa_shares_heads(28, 4, 640));
  EXPECT_TRUE(cuda::attention_decode_gqa_shares_heads(28, 4, 1024));
  EXPECT_FALSE(cuda::attention_decode_gqa_shares_heads(14, 2, 1024));
  EXPECT_TRUE(cuda::attention_decode_gqa_shares_heads(14, 2, 16384));
}

TEST(CudaAttention, DecodeSameLaunchFollowsDevicePosition) {
  MINFER_REQUIRE_GPU();
  uint32_t seed = 200;
  for (const Heads& h : kDecodeHeads) {
    Decode d(h, 1024, seed += 10);
    for (int32_t p : {255, 1000, 1, 37}) {
      d.set_position(p, nullptr);
      d.launch(nullptr);
      d.expect_matches_cpu(p, "replayed launch");
    }
  }
}

TEST(CudaAttention, DecodeCapturedGraphFollowsDevicePosition) {
  MINFER_REQUIRE_GPU();
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint32_t seed = 300;
  for (const Heads& h : kDecodeHeads) {
    Decode d(h, 1024, seed += 10);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    d.launch(s);
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int32_t p : {37, 1000, 5}) {
      d.set_position(p, s);
      CUDA_CHECK(cudaGraphLaunch(exec, s));
      cuda::sync_bounded(s, "attention_decode graph");
      d.expect_matches_cpu(p, "graph");
    }
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  CUDA_CHECK(cudaStreamDestroy(s));
}

TEST(CudaAttention, ScratchSizeCoversTheReservedContext) {
  MINFER_REQUIRE_GPU();
  const int64_t chunk = cuda::attention_decode_chunk();
  EXPECT_GT(chunk, 0);
  // One (max, sum, acc[head_dim]) slot per head and per chunk of the reserved context.
  EXPECT_EQ(cuda::attention_decode_scratch_floats(14, 64, 1024), 14 * ((1024 + chunk - 1) / chunk) * (64 + 2));
  EXPECT_EQ(cuda::attention_decode_scratch_floats(14, 64, 1025), 14 * ((1025 + chunk - 1) / chunk) * (64 + 2));
}

TEST(CudaAttention, BadArgumentsNameTheKernel) {
  MINFER_REQUIRE_GPU();
  auto d = poisoned(1 << 16);
  float* f = d.as<float>();
  const int32_t* p = d.as<int32_t>();
  try {
    cuda::attention_prefill(f, p, f, f, f, 1, 14, 3, 64, nullptr);  // 14 heads do not group over 3
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_prefill"), std::string::npos) << e.what();
  }
  try {
    cuda::attention_prefill_mma(f, p, f, f, f, 1, 2, 2, 80, nullptr);  // not a tensor-core head_dim
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_prefill_mma"), std::string::npos) << e.what();
  }
  try {
    cuda::attention_decode(f, p, f, f, f, 2, 2, 300, 16, f, d.as<unsigned int>(), nullptr);  // head_dim > 256
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_decode"), std::string::npos) << e.what();
  }
}
