// The programs' choice of a backend (recorder/programs/cli/backend_choice.h, --backend auto|cpu|cuda):
// asking for the cuda backend without a usable GPU is a clear error and auto picks the CPU (that
// part runs in CI too), and the program's CudaOptions reach the backend through make_backend.
// (Moved from engine/tests/test_cuda_backend.cpp with the programs: the engine's tests do not
// link the programs' library.)
#include <gtest/gtest.h>

#include <string>

#include "cli/backend_choice.h"
#include "core/error.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_info.h"
#include "cuda/pdl.h"
#include "cuda_test_util.h"
#include "model/model.h"
#include "test_models.h"

using namespace minfer;

TEST(CudaBackend, ErrorWithoutUsableGpu) {
  std::string why;
  if (cuda::device_usable(&why)) GTEST_SKIP() << "SKIPPED: a usable GPU is present (this test is for machines without one)";
  auto path = minfer::testing::generated_model("cuda-err-q8_0", "tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(path);
  auto m = Model::load(path);
  try {
    make_backend("cuda", *m, MatmulPath::MMQ, CudaOptions{}, nullptr, true);
    FAIL() << "--backend cuda without a GPU must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--backend cuda"), std::string::npos) << e.what();
  }
  auto b = make_backend("auto", *m, MatmulPath::MMQ, CudaOptions{}, nullptr, true);
  EXPECT_EQ(b->name(), "cpu");
}

// The program's CudaOptions (EngineOptions::cuda, read from the environment by the main) reach
// the backend through make_backend: no variable is read below the main. The process-wide
// switches (PDL, launch sync, wait bound) are set from them when the backend is built.
TEST(CudaBackend, OptionsReachTheBackend) {
  MINFER_REQUIRE_GPU();
  auto path = minfer::testing::generated_model("cuda-err-q8_0", "tiny", GenWeights::Q8_0);
  MINFER_REQUIRE_MODEL(path);
  auto m = Model::load(path);
  CudaOptions off;
  off.step_graphs = false;  // MINFER_NO_CUDA_GRAPH=1
  off.chain = false;        // MINFER_CUDA_CHAIN=0
  off.cupti = false;        // MINFER_NO_CUPTI=1
  off.pdl = false;          // MINFER_PDL=0
  {
    auto b = make_backend("cuda", *m, MatmulPath::MMQ, off, nullptr, true);
    EXPECT_FALSE(b->step_graphs());
    EXPECT_FALSE(b->chains_greedy_token());
    EXPECT_EQ(b->probes().kernel_records_unavailable(), "disabled by MINFER_NO_CUPTI=1");
    EXPECT_FALSE(cuda::pdl_enabled());
  }
  auto b = make_backend("cuda", *m, MatmulPath::MMQ, CudaOptions{}, nullptr, true);
  EXPECT_TRUE(b->step_graphs());
  EXPECT_TRUE(b->chains_greedy_token());
  EXPECT_TRUE(cuda::pdl_enabled());
  EXPECT_NE(b->probes().kernel_records_unavailable(), "disabled by MINFER_NO_CUPTI=1");
}
