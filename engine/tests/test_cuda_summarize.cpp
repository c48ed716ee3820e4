// Device node summaries (engine/probes/cuda/summarize.cu) against summarize_host on the same tensors,
// all summarised in ONE batch (as a traced step does): random values with planted outliers,
// NaN, +Inf and -Inf, a constant tensor (hi == lo), an all-NaN tensor, a 1 x 151936 logits row
// (many chunks), a prefill-shaped 17 x 4864 tensor, both sides of the one-CTA limit (8192
// elements) and odd shapes; several recorder specs.
// Also the largest-|x| outliers (outliers_host) and the 8-bit block scales (block_scales_host),
// with a planted run of equal |x| values for the tie rule.
// Tolerances: min, max, counts, grid values, histogram counts and outliers exactly equal; mean,
// absmean, std and the mean block scale within 1e-12 relative (double sums in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda_test_util.h"
#include "probes/cuda/summarize.h"
#include "probes/summarize.h"
#include "probes/tensor_compare.h"

using namespace minfer;
using minfer::testing::random_floats;
using minfer::testing::to_device;

namespace {

struct Case {
  std::string name;
  int64_t rows, cols;
  std::vector<float> data;
};

std::vector<Case> cases() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<Case> cs;
  uint32_t seed = 7;
  auto add = [&](std::string name, int64_t r, int64_t c, float scale) {
    cs.push_back({std::move(name), r, c, random_floats(static_cast<size_t>(r * c), seed++, scale)});
    return &cs.back().data;
  };
  add("decode row 896", 1, 896, 1.0f);
  auto* res = add("residual 17x896 +30 channel", 17, 896, 2.0f);
  for (int64_t r = 0; r < 17; ++r) (*res)[static_cast<size_t>(r * 896 + 5)] += 30.0f;
  add("prefill ffn 17x4864", 17, 4864, 0.7f);
  auto* lg = add("logits 1x151936", 1, 151936, 3.0f);
  (*lg)[123] = nan;
  (*lg)[151935] = inf;
  auto* ties = add("ties 3x896", 3, 896, 1.0f);
  for (size_t i : {5u, 900u, 901u, 2000u, 2687u}) (*ties)[i] = (i % 2 ? -9.5f : 9.5f);  // equal |x|: lower index first
  auto* bad = add("with nan/inf 5x333", 5, 333, 1.0f);
  (*bad)[0] = nan;
  (*bad)[10] = -inf;
  (*bad)[11] = -inf;
  (*bad)[600] = inf;
  (*bad)[1664] = nan;
  cs.push_back({"constant 3x7", 3, 7, std::vector<float>(21, 2.5f)});
  cs.push_back({"all nan 2x9", 2, 9, std::vector<float>(18, nan)});
  cs.push_back({"only infinities 1x4", 1, 4, {inf, -inf, inf, nan}});
  add("tall 300x5", 300, 5, 1.0f);
  // The largest tensor one CTA summarises whole (small_kernel), and the smallest one cut into chunks.
  auto* edge = add("one-CTA limit 1x8192", 1, 8192, 1.5f);
  (*edge)[8191] = -inf;
  (*edge)[4000] = 40.0f;
  add("two chunks 2x4097", 2, 4097, 1.5f);
  // Equal |x| everywhere: more outlier candidates than one warp ranks (the general path).
  cs.push_back({"constant 1x4000", 1, 4000, std::vector<float>(4000, -1.25f)});
  std::vector<float> signs(20000, 0.75f);
  for (size_t i = 0; i < signs.size(); i += 3) signs[i] = -0.75f;
  cs.push_back({"equal |x| 1x20000", 1, 20000, signs});
  add("one element", 1, 1, 1.0f);
  return cs;
}

bool same_float(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_rel(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
    return;
  }
  EXPECT_LE(std::fabs(got - want), 1e-12 * std::max(1.0, std::fabs(want))) << what << ": got " << got << ", want " << want;
}

void expect_equal(const TensorSummary& got, const TensorSummary& want, const std::string& what) {
  const TensorStats &g = got.stats, &w = want.stats;
  EXPECT_TRUE(same_float(g.min, w.min)) << what << " min " << g.min << " vs " << w.min;
  EXPECT_TRUE(same_float(g.max, w.max)) << what << " max " << g.max << " vs " << w.max;
  expect_rel(g.mean, w.mean, what + " mean");
  expect_rel(g.absmean, w.absmean, what + " absmean");
  expect_rel(g.std, w.std, what + " std");
  EXPECT_EQ(g.count, w.count) << what;
  EXPECT_EQ(g.nan, w.nan) << what;
  EXPECT_EQ(g.inf, w.inf) << what;
  EXPECT_EQ(got.grid.rows, want.grid.rows) << what;
  EXPECT_EQ(got.grid.cols, want.grid.cols) << what;
  EXPECT_EQ(got.grid.row_stride, want.grid.row_stride) << what;
  EXPECT_EQ(got.grid.col_stride, want.grid.col_stride) << what;
  ASSERT_EQ(got.grid.values.size(), want.grid.values.size()) << what;
  for (size_t i = 0; i < got.grid.values.size(); ++i)
    ASSERT_TRUE(same_float(got.grid.values[i], want.grid.values[i])) << what << " grid cell " << i;
  EXPECT_TRUE(same_float(got.hist.lo, want.hist.lo)) << what;
  EXPECT_TRUE(same_float(got.hist.hi, want.hist.hi)) << what;
  EXPECT_EQ(got.hist.counts, want.hist.counts) << what;
  EXPECT_EQ(got.hist.underflow, want.hist.underflow) << what;
  EXPECT_EQ(got.hist.overflow, want.hist.overflow) << what;
}

}  // namespace

TEST(CudaSummarize, MatchesHostInOneBatch) {
  MINFER_REQUIRE_GPU();
  const std::vector<Case> cs = cases();
  std::vector<cuda::DeviceBuffer> bufs;
  std::vector<cuda::SummaryTensor> tensors;
  for (const Case& c : cs) {
    bufs.push_back(to_device(c.data));
    // Block scales where a matmul could read the tensor: 32-element blocks (and a shorter last
    // block for widths like 333).
    tensors.push_back({bufs.back().as<float>(), c.rows, c.cols, c.cols >= 32 ? 32 : 0});
  }
  SummarySpec recorder_default;
  SummarySpec stats_only{true, 0, 0, 0};
  SummarySpec odd{true, 5, 7, 13};
  int slot = 0;
  const int outliers_of[] = {8, 0, 3};
  int which = 0;
  for (const SummarySpec& spec : {recorder_default, stats_only, odd}) {
    const int k = outliers_of[which++];
    cuda::DeviceSummaries ds(tensors, spec, k);
    ASSERT_EQ(ds.tensors(), cs.size());
    // Twice on alternating slots: the second run must not see the first one's counts. The
    // second runs in three uneven parts (as a traced step forks them), which must not matter.
    for (int rep = 0; rep < 2; ++rep, slot ^= 1) {
      if (rep == 0) {
        ds.enqueue(nullptr);
      } else {
        const size_t cut1 = 1, cut2 = cs.size() / 2;
        ds.enqueue(nullptr, 0, cut1);
        ds.enqueue(nullptr, cut1, cut2);
        ds.enqueue(nullptr, cut2, cs.size());
        ds.enqueue(nullptr, cs.size(), cs.size());  // an empty part launches nothing
        EXPECT_THROW(ds.enqueue(nullptr, 2, 1), Error);
      }
      ds.copy_to_host(nullptr, slot);
      for (size_t i = 0; i < cs.size(); ++i) {
        const TensorSummary want = summarize_host(cs[i].data.data(), cs[i].rows, cs[i].cols, spec);
        const std::string what = cs[i].name + " grid " + std::to_string(spec.grid_rows) + "x" +
                                 std::to_string(spec.grid_cols) + " bins " + std::to_string(spec.hist_bins) + " k " +
                                 std::to_string(k) + " rep " + std::to_string(rep);
        expect_equal(ds.read(slot, i), want, what);
        const int64_t n = cs[i].rows * cs[i].cols;
        const auto want_out = outliers_host(cs[i].data.data(), n, k, nullptr);
        const auto got_out = ds.read_outliers(slot, i);
        ASSERT_EQ(got_out.size(), want_out.size()) << what;
        for (size_t o = 0; o < got_out.size(); ++o) {
          EXPECT_EQ(got_out[o].index, want_out[o].index) << what << " outlier " << o;
          EXPECT_TRUE(same_float(got_out[o].value, want_out[o].value)) << what << " outlier " << o;
        }
        if (tensors[i].scale_block > 0) {
          const BlockScales w = block_scales_host(cs[i].data.data(), cs[i].rows, cs[i].cols, 32), g = ds.read_scales(slot, i);
          EXPECT_EQ(g.blocks, w.blocks) << what;
          EXPECT_EQ(g.block_size, 32) << what;
          EXPECT_EQ(g.min, w.min) << what;
          EXPECT_EQ(g.max, w.max) << what;
          expect_rel(g.mean, w.mean, what + " mean block scale");
        }
      }
    }
  }
}

TEST(CudaSummarize, CapturedInAGraphAndReplayed) {
  MINFER_REQUIRE_GPU();
  // A replayed graph reads the tensors' CURRENT contents: change them between replays.
  std::vector<float> a = random_floats(4864, 3, 1.0f);
  cuda::DeviceBuffer d = to_device(a);
  cuda::DeviceSummaries ds({{d.as<float>(), 1, 4864, 32}}, SummarySpec{}, 8);
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  ds.enqueue(s);
  CUDA_CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
  for (int rep = 0; rep < 3; ++rep) {
    a = random_floats(4864, 100 + static_cast<uint32_t>(rep), 1.0f + rep);
    a[17] = std::numeric_limits<float>::quiet_NaN();
    CUDA_CHECK(cudaMemcpyAsync(d.get(), a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    ds.copy_to_host(s, rep & 1);
    expect_equal(ds.read(rep & 1, 0), summarize_host(a.data(), 1, 4864, SummarySpec{}), "replay " + std::to_string(rep));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}
