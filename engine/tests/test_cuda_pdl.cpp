// Programmatic dependent launch (engine/cuda/pdl.cuh): the kernels of a step may start while the
// previous kernel drains and wait (griddepcontrol.wait) before touching memory, so results must
// not change at all:
//  - a captured pair of launches is joined by a programmatic edge with PDL on, a plain edge off;
//  - a long chain of dependent in-place kernels (read-after-write and write-after-read on the
//    same buffer, integers in float: exact) gives the exact sum, eager and replayed in a graph;
//  - the tiny model's prefill and decode steps (graphs on, and eager; fused, unfused, the float
//    prefill path with cuBLAS between PDL kernels) give bit-identical node outputs, logits and
//    greedy tokens with PDL on and off.
// Tolerance: exact.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/elementwise.h"
#include "cuda/pdl.h"
#include "cuda_test_util.h"
#include "exec/executor.h"
#include "graph/build_graph.h"
#include "test_models.h"
#include "tiny_run.h"

using namespace minfer;
using minfer::testing::to_device;
using minfer::testing::to_host;

namespace {

// Sets the PDL switch for a scope and restores it (a failed assertion must not leave it changed
// for the next test).
struct PdlSwitch {
  bool saved = cuda::pdl_enabled();
  explicit PdlSwitch(bool on) { cuda::set_pdl_enabled(on); }
  ~PdlSwitch() { cuda::set_pdl_enabled(saved); }
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

// Integers in [lo, hi] as floats (exact in f32 as long as sums stay below 2^24); never all zero.
std::vector<float> small_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng));
  v[0] = static_cast<float>(hi);
  return v;
}

// to_device, then a device-wide wait: cudaMemcpy from pageable memory may return before its DMA
// has landed, and the legacy stream it runs on does not order the non-blocking streams below.
template <class T>
cuda::DeviceBuffer upload(const std::vector<T>& h) {
  auto b = to_device(h);
  CUDA_CHECK(cudaDeviceSynchronize());
  return b;
}

// Bit-for-bit equality (NaN patterns included).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace

TEST(CudaPdl, CapturedLaunchesGetProgrammaticEdges) {
  MINFER_REQUIRE_GPU();
  const size_t n = 4096;
  auto a = upload(small_ints(n, 1, -9, 9));
  auto b = upload(small_ints(n, 2, 1, 9));
  auto y = upload(small_ints(n, 3, -9, 9));
  Stream st;
  for (bool on : {true, false}) {
    PdlSwitch sw(on);
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal));
    cuda::add(a.as<float>(), b.as<float>(), y.as<float>(), static_cast<int64_t>(n), st.s);
    cuda::add(y.as<float>(), b.as<float>(), y.as<float>(), static_cast<int64_t>(n), st.s);
    CUDA_CHECK(cudaStreamEndCapture(st.s, &g));
    cudaGraphNode_t from[4], to[4];
    cudaGraphEdgeData data[4] = {};
    size_t edges = 4;
    CUDA_CHECK(cudaGraphGetEdges(g, from, to, data, &edges));
    ASSERT_EQ(edges, 1u) << "PDL " << (on ? "on" : "off");
    EXPECT_EQ(data[0].type, on ? cudaGraphDependencyTypeProgrammatic : cudaGraphDependencyTypeDefault)
        << "PDL " << (on ? "on" : "off");
    cudaGraphExec_t exec = nullptr;
    CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_CHECK(cudaGraphLaunch(exec, st.s));
    CUDA_CHECK(cudaStreamSynchronize(st.s));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
  }
}

// y += b, 400 times, in place (each kernel reads what the previous one wrote and overwrites what
// it read), interleaved with a copy out and back through a second buffer and a scale by 1: with a
// missing wait, a kernel would read a stale y or overwrite one still being read.
TEST(CudaPdl, LongDependentChainIsExact) {
  MINFER_REQUIRE_GPU();
  const size_t n = (size_t{1} << 20) + 3;  // ~4 MB per buffer: the kernels take microseconds and overlap
  constexpr int kSteps = 400;
  const auto y0 = small_ints(n, 10, -1000, 1000);
  const auto bh = small_ints(n, 11, 1, 7);
  std::vector<float> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = y0[i] + kSteps * bh[i];
  auto b = upload(bh);
  auto ones = upload(std::vector<float>(n, 1.0f));
  cuda::DeviceBuffer t(n * sizeof(float), "pdl test temp");
  Stream st;
  auto enqueue = [&](cuda::DeviceBuffer& y) {
    const auto ni = static_cast<int64_t>(n);
    for (int k = 0; k < kSteps; ++k) {
      cuda::add(y.as<float>(), b.as<float>(), y.as<float>(), ni, st.s);
      if (k % 4 == 1) {
        cuda::copy_row(y.as<float>(), 0, ni, t.as<float>(), st.s);
        cuda::mul(t.as<float>(), ones.as<float>(), y.as<float>(), ni, st.s);
      }
    }
  };
  for (bool on : {true, false}) {
    PdlSwitch sw(on);
    const std::string what = std::string("PDL ") + (on ? "on" : "off");
    {  // eager
      auto y = upload(y0);
      enqueue(y);
      EXPECT_EQ(to_host<float>(y, n), want) << what << ", eager";
    }
    {  // captured once, replayed twice from the same start
      auto y = upload(y0);
      cudaGraph_t g = nullptr;
      cudaGraphExec_t exec = nullptr;
      CUDA_CHECK(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal));
      enqueue(y);
      CUDA_CHECK(cudaStreamEndCapture(st.s, &g));
      CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
      for (int replay = 0; replay < 2; ++replay) {
        CUDA_CHECK(cudaMemcpyAsync(y.get(), y0.data(), n * sizeof(float), cudaMemcpyHostToDevice, st.s));
        CUDA_CHECK(cudaGraphLaunch(exec, st.s));
        CUDA_CHECK(cudaStreamSynchronize(st.s));
        EXPECT_EQ(to_host<float>(y, n), want) << what << ", graph replay " << replay;
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(g);
    }
  }
  {  // the legacy default stream takes the attribute too
    PdlSwitch sw(true);
    auto y = upload(y0);
    for (int k = 0; k < kSteps; ++k)
      cuda::add(y.as<float>(), b.as<float>(), y.as<float>(), static_cast<int64_t>(n), nullptr);
    EXPECT_EQ(to_host<float>(y, n), want) << "PDL on, legacy stream";
  }
}

namespace {

using minfer::testing::kPrompt;
using minfer::testing::kDecodeInputs;  // teacher-forced


using minfer::testing::StepResult;

struct PdlCase {
  const char* name;
  const char* weights;
  GenWeights gen;
  MatmulPath path;
  bool graphs;
  bool fusion;
};

// The backend is built (and its graphs captured) with the switch as the caller set it: its
// options carry it (the backend sets the process-wide switch from them).
std::vector<StepResult> run_model(const PdlCase& c, const Model& m, const Graph& pre, const Graph& dec) {
  CudaOptions co;
  co.step_graphs = c.graphs;  // MINFER_NO_CUDA_GRAPH=1 when false
  co.step_fusion = c.fusion;  // MINFER_CUDA_FUSION=0 when false
  co.pdl = cuda::pdl_enabled();
  CudaBackend b(m, c.path, co);
  EXPECT_EQ(b.step_graphs(), c.graphs);
  return minfer::testing::run_teacher_forced(b, pre, dec);
}

const PdlCase kPdlCases[] = {
    {"q4_0_graphs", "q4_0", GenWeights::Q4_0, MatmulPath::MMQ, true, true},
    {"q4_0_eager", "q4_0", GenWeights::Q4_0, MatmulPath::MMQ, false, true},
    {"q4_0_graphs_unfused", "q4_0", GenWeights::Q4_0, MatmulPath::MMQ, true, false},
    {"q6_k_graphs", "q6_k", GenWeights::Q6_K, MatmulPath::MMQ, true, true},
    {"f16_graphs", "f16", GenWeights::F16, MatmulPath::MMQ, true, true},
    {"q4_k_m_float_graphs", "q4_k_m", GenWeights::Q4_K_M, MatmulPath::Float, true, true},
};

class PdlOnVsOff : public ::testing::TestWithParam<PdlCase> {};

}  // namespace

TEST_P(PdlOnVsOff, TinyModelBitIdentical) {
  MINFER_REQUIRE_GPU();
  const PdlCase& c = GetParam();
  auto path = minfer::testing::generated_model(std::string("cuda-") + c.weights, "tiny", c.gen);
  MINFER_REQUIRE_MODEL(path);
  auto m = Model::load(path);
  const Graph pre = make_graph(*m, Phase::Prefill, static_cast<int>(kPrompt.size()));
  const Graph dec = make_graph(*m, Phase::Decode, 1);
  std::vector<StepResult> on, off;
  {
    PdlSwitch sw(true);
    on = run_model(c, *m, pre, dec);
  }
  {
    PdlSwitch sw(false);
    off = run_model(c, *m, pre, dec);
  }
  ASSERT_EQ(on.size(), off.size());
  for (size_t s = 0; s < on.size(); ++s) {
    EXPECT_TRUE(same_bits(on[s].logits, off[s].logits)) << c.name << " step " << s << ": logits";
    EXPECT_EQ(on[s].greedy, off[s].greedy) << c.name << " step " << s << ": greedy token";
    ASSERT_EQ(on[s].nodes.size(), off[s].nodes.size());
    for (size_t i = 0; i < on[s].nodes.size(); ++i)
      EXPECT_TRUE(same_bits(on[s].nodes[i], off[s].nodes[i])) << c.name << " step " << s << " node " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PdlOnVsOff, ::testing::ValuesIn(kPdlCases),
                         [](const auto& info) { return std::string(info.param.name); });
