// The engine's options from the environment (core/engine_options.h): every variable, its
// default, the value that turns a switch, and the checks of the numbers (the same messages as
// core/parse_number.h gives a flag). The environment is an explicit map (core/environment.h):
// the libraries never read the process's own.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"

#include "error_of.h"

using namespace minfer;

namespace {

using minfer::testing::error_of;

EngineOptions with(const std::string& var, const std::string& value) {
  return EngineOptions::from_env({{var, value}});
}

}  // namespace

TEST(EngineOptions, DefaultsWithoutVariables) {
  const EngineOptions o = EngineOptions::from_env({});
  const EngineOptions d;
  EXPECT_FALSE(o.prefill.has_value());  // the backend's default
  EXPECT_TRUE(o.graph_fusion);
  EXPECT_EQ(o.threads, 0);
  EXPECT_EQ(d.threads, 0);
  const CudaOptions& c = o.cuda;
  EXPECT_TRUE(c.step_graphs);
  EXPECT_TRUE(c.step_fusion);
  EXPECT_TRUE(c.chain);
  EXPECT_TRUE(c.mmvq_stream);
  EXPECT_TRUE(c.mmvq_direct);
  EXPECT_EQ(c.mmq_tile, 0);
  EXPECT_TRUE(c.cupti);
  EXPECT_TRUE(c.pdl);
  EXPECT_FALSE(c.sync_launches);
  EXPECT_DOUBLE_EQ(c.wait_timeout_s, 120.0);
  // from_env of nothing is the struct's defaults.
  EXPECT_EQ(d.prefill, o.prefill);
  EXPECT_EQ(d.cuda.step_graphs, c.step_graphs);
  EXPECT_DOUBLE_EQ(d.cuda.wait_timeout_s, c.wait_timeout_s);
}

// Each switch turns on exactly the value it always took; anything else (another spelling, an
// empty value) leaves the default, as before the options were read in one place.
TEST(EngineOptions, SwitchesTakeTheirOneValue) {
  EXPECT_EQ(with("MINFER_MMQ", "0").prefill, MatmulPath::Float);
  EXPECT_EQ(with("MINFER_MMQ", "1").prefill, MatmulPath::MMQ);
  EXPECT_FALSE(with("MINFER_NO_FUSION", "1").graph_fusion);
  EXPECT_FALSE(with("MINFER_NO_CUDA_GRAPH", "1").cuda.step_graphs);
  EXPECT_FALSE(with("MINFER_CUDA_FUSION", "0").cuda.step_fusion);
  EXPECT_FALSE(with("MINFER_CUDA_CHAIN", "0").cuda.chain);
  EXPECT_FALSE(with("MINFER_MMVQ_STREAM", "0").cuda.mmvq_stream);
  EXPECT_FALSE(with("MINFER_MMVQ_DIRECT", "0").cuda.mmvq_direct);
  EXPECT_FALSE(with("MINFER_NO_CUPTI", "1").cuda.cupti);
  EXPECT_FALSE(with("MINFER_PDL", "0").cuda.pdl);
  EXPECT_TRUE(with("MINFER_CUDA_SYNC", "1").cuda.sync_launches);
  for (const std::string v : {"", "false", "off", "no", "2", " 0", "1 "}) {
    SCOPED_TRACE("'" + v + "'");
    EXPECT_FALSE(with("MINFER_MMQ", v).prefill.has_value());
    EXPECT_TRUE(with("MINFER_CUDA_FUSION", v).cuda.step_fusion);
    EXPECT_TRUE(with("MINFER_CUDA_CHAIN", v).cuda.chain);
    EXPECT_TRUE(with("MINFER_MMVQ_STREAM", v).cuda.mmvq_stream);
    EXPECT_TRUE(with("MINFER_MMVQ_DIRECT", v).cuda.mmvq_direct);
    EXPECT_TRUE(with("MINFER_PDL", v).cuda.pdl);
  }
  for (const std::string v : {"", "true", "yes", "on", "0", "2"}) {
    SCOPED_TRACE("'" + v + "'");
    EXPECT_TRUE(with("MINFER_NO_FUSION", v).graph_fusion);
    EXPECT_TRUE(with("MINFER_NO_CUDA_GRAPH", v).cuda.step_graphs);
    EXPECT_TRUE(with("MINFER_NO_CUPTI", v).cuda.cupti);
    EXPECT_FALSE(with("MINFER_CUDA_SYNC", v).cuda.sync_launches);
  }
}

TEST(EngineOptions, NumbersInRange) {
  EXPECT_EQ(with("MINFER_THREADS", "3").threads, 3);
  EXPECT_EQ(with("MINFER_THREADS", "1024").threads, 1024);
  EXPECT_EQ(with("MINFER_THREADS", "").threads, 0);  // empty counts as unset
  for (int tile : {0, 16, 32, 64, 128}) EXPECT_EQ(with("MINFER_MMQ_TILE", std::to_string(tile)).cuda.mmq_tile, tile);
  EXPECT_DOUBLE_EQ(with("MINFER_CUDA_TIMEOUT_S", "2.5").cuda.wait_timeout_s, 2.5);
  EXPECT_DOUBLE_EQ(with("MINFER_CUDA_TIMEOUT_S", "").cuda.wait_timeout_s, 120.0);
}

// A bad number names the variable, its range and the text, whichever variable it is.
TEST(EngineOptions, BadNumbersNameTheVariableAndRange) {
  for (const std::string v : {"100000", "0", "abc", "-3", "4x", " 8"})
    EXPECT_EQ(error_of([&] { with("MINFER_THREADS", v); }),
              "MINFER_THREADS: expected an integer from 1 to 1024, got '" + v + "'");
  for (const std::string v : {"129", "-1", "sixty-four", "64.0"})
    EXPECT_EQ(error_of([&] { with("MINFER_MMQ_TILE", v); }),
              "MINFER_MMQ_TILE: expected an integer from 0 to 128, got '" + v + "'");
  for (const std::string v : {"0", "1e9", "nan", "inf", "10s"})
    EXPECT_EQ(error_of([&] { with("MINFER_CUDA_TIMEOUT_S", v); }),
              "MINFER_CUDA_TIMEOUT_S: expected a number from 0.001 to 86400, got '" + v + "'");
}

// Every variable is checked, not only those a backend would read: a bad number is an error
// before any work, on any backend.
TEST(EngineOptions, EveryNumberIsCheckedTogether) {
  EXPECT_NE(error_of([] { EngineOptions::from_env({{"MINFER_MMQ", "0"}, {"MINFER_MMQ_TILE", "999"}}); }).find("MINFER_MMQ_TILE"),
            std::string::npos);
  EXPECT_EQ(error_of([] { EngineOptions::from_env({{"MINFER_OTHER", "x"}, {"HOME", "/nowhere"}}); }), "(no error)");
}

// process_environment() copies the process's variables, empty values and '=' in values kept.
TEST(Environment, ProcessEnvironmentIsACopy) {
  setenv("MINFER_TEST_ENV_A", "x=1", 1);
  setenv("MINFER_TEST_ENV_EMPTY", "", 1);
  unsetenv("MINFER_TEST_ENV_UNSET");
  const Environment env = process_environment();
  EXPECT_EQ(env_text(env, "MINFER_TEST_ENV_A"), "x=1");
  ASSERT_EQ(env.count("MINFER_TEST_ENV_EMPTY"), 1u);
  EXPECT_EQ(env.at("MINFER_TEST_ENV_EMPTY"), "");
  EXPECT_EQ(env.count("MINFER_TEST_ENV_UNSET"), 0u);
  setenv("MINFER_TEST_ENV_A", "changed", 1);
  EXPECT_EQ(env_text(env, "MINFER_TEST_ENV_A"), "x=1");  // a copy: later changes do not reach it
  unsetenv("MINFER_TEST_ENV_A");
  unsetenv("MINFER_TEST_ENV_EMPTY");
}

TEST(Environment, TypedLookups) {
  const Environment env = {{"N", "7"}, {"E", ""}, {"X", "70"}, {"S", "0"}};
  EXPECT_EQ(env_int(env, "N", 1, 9, -1), 7);
  EXPECT_EQ(env_int(env, "E", 1, 9, -1), -1);  // empty: unset
  EXPECT_EQ(env_int(env, "U", 1, 9, -1), -1);
  EXPECT_DOUBLE_EQ(env_number(env, "U", 1, 9, 120.0), 120.0);
  EXPECT_EQ(error_of([&] { env_int(env, "X", 1, 9, -1); }), "X: expected an integer from 1 to 9, got '70'");
  EXPECT_EQ(error_of([&] { env_number(env, "X", 1, 9, 1); }), "X: expected a number from 1 to 9, got '70'");
  EXPECT_TRUE(env_equals(env, "S", "0"));
  EXPECT_FALSE(env_equals(env, "U", ""));
  EXPECT_EQ(env_text(env, "U"), "");
}
