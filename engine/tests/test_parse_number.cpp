// The one parser of the numbers a user sets (core/parse_number.h): whole text, decimal, in range,
// or an Error naming the flag or variable, the range and what was given.
#include <cstdlib>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/thread_pool.h"

#include "error_of.h"

using namespace minfer;

namespace {

using minfer::testing::error_of;

}  // namespace

TEST(ParseNumber, IntegersInRange) {
  EXPECT_EQ(parse_int("1", "--threads", 1, 1024), 1);
  EXPECT_EQ(parse_int("1024", "--threads", 1, 1024), 1024);
  EXPECT_EQ(parse_int("-5", "x", -10, 10), -5);
  EXPECT_EQ(parse_int("007", "x", 0, 10), 7);
  EXPECT_EQ(parse_int("-9223372036854775808", "x", std::numeric_limits<int64_t>::min(), 0),
            std::numeric_limits<int64_t>::min());
}

TEST(ParseNumber, IntegerErrorsNameTheSettingAndTheRange) {
  EXPECT_EQ(error_of([] { parse_int("100000", "MINFER_THREADS", 1, 1024); }),
            "MINFER_THREADS: expected an integer from 1 to 1024, got '100000'");
  // Not a whole decimal integer: garbage, signs and spaces strtol would skip, fractions, empty.
  for (const std::string v : {"0", "abc", "", "4x", " 8", "8 ", "+8", "1.5", "1e3", "0x10", "--1"})
    EXPECT_EQ(error_of([&] { parse_int(v, "MINFER_THREADS", 1, 1024); }),
              "MINFER_THREADS: expected an integer from 1 to 1024, got '" + v + "'")
        << v;
  // Beyond the machine word: out of range, never wrapped or clamped.
  EXPECT_EQ(error_of([] { parse_int("99999999999999999999", "-n", 0, 1 << 20); }),
            "-n: expected an integer from 0 to 1048576, got '99999999999999999999'");
  // A hostile value is quoted, not copied whole into the message.
  const std::string huge(10000, '7');
  EXPECT_LT(error_of([&] { parse_int(huge, "x", 0, 1); }).size(), 200u);
}

TEST(ParseNumber, UnsignedTakesTheWholeRangeAndNoSign) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(parse_uint("18446744073709551615", "--seed", 0, kMax), kMax);
  for (const std::string v : {"-1", "18446744073709551616", "1x", "abc"})
    EXPECT_EQ(error_of([&] { parse_uint(v, "--seed", 0, kMax); }),
              "--seed: expected an integer from 0 to 18446744073709551615, got '" + v + "'")
        << v;
}

TEST(ParseNumber, FiniteNumbersInRange) {
  EXPECT_DOUBLE_EQ(parse_number("0.7", "--temp", 0, 100), 0.7);
  EXPECT_DOUBLE_EQ(parse_number("1e1", "--temp", 0, 100), 10.0);
  EXPECT_DOUBLE_EQ(parse_number("-3", "x", -5, 5), -3.0);
  EXPECT_DOUBLE_EQ(parse_number("2.5", "x", 0, 5), 2.5);
  for (const std::string v : {"nan", "inf", "-inf", "101", "-0.5", "", "0.7x", " 1", "1e400", "0x1p3"})
    EXPECT_EQ(error_of([&] { parse_number(v, "--temp", 0, 100); }),
              "--temp: expected a number from 0 to 100, got '" + v + "'")
        << v;
}

TEST(ParseNumber, ByteSizes) {
  EXPECT_EQ(parse_byte_size("300", "--max-trace-bytes"), 300u);
  EXPECT_EQ(parse_byte_size("2K", "--max-trace-bytes"), 2048u);
  EXPECT_EQ(parse_byte_size("3m", "--max-trace-bytes"), 3u << 20);
  EXPECT_EQ(parse_byte_size("1G", "--max-trace-bytes"), uint64_t(1) << 30);
  for (const std::string v : {"0", "-5", "abc", "", "5T", "5KB", "17179869184G", " 5"})
    EXPECT_EQ(error_of([&] { parse_byte_size(v, "MINFER_TRACE_MAX_BYTES"); }),
              "MINFER_TRACE_MAX_BYTES: expected a size in bytes from 1 to 18446744073709551615, optionally "
              "with K, M or G (1024, 1024^2, 1024^3), got '" + v + "'")
        << v;
}

// A variable of the environment a program's main read (core/environment.h) goes through the
// same checks.
TEST(ParseNumber, EnvironmentVariablesGoThroughTheSameCheck) {
  EXPECT_EQ(env_int({}, "MINFER_TEST_NUMBER", 1, 9, -1), -1);  // unset: the caller's default
  EXPECT_DOUBLE_EQ(env_number({}, "MINFER_TEST_NUMBER", 1, 9, 120.0), 120.0);
  EXPECT_EQ(env_int({{"MINFER_TEST_NUMBER", ""}}, "MINFER_TEST_NUMBER", 1, 9, -1), -1);  // empty counts as unset
  const Environment seven = {{"MINFER_TEST_NUMBER", "7"}}, seventy = {{"MINFER_TEST_NUMBER", "70"}};
  EXPECT_EQ(env_int(seven, "MINFER_TEST_NUMBER", 1, 9, -1), 7);
  EXPECT_DOUBLE_EQ(env_number(seven, "MINFER_TEST_NUMBER", 1, 9, 120.0), 7.0);
  EXPECT_EQ(error_of([&] { env_int(seventy, "MINFER_TEST_NUMBER", 1, 9, -1); }),
            "MINFER_TEST_NUMBER: expected an integer from 1 to 9, got '70'");
  EXPECT_EQ(error_of([&] { env_number(seventy, "MINFER_TEST_NUMBER", 1, 9, 1); }),
            "MINFER_TEST_NUMBER: expected a number from 1 to 9, got '70'");
}

// MINFER_THREADS is read by the program's main (EngineOptions::from_env), which sizes the
// global pool with it (ThreadPool::set_global_threads).
TEST(ParseNumber, ThreadCountFromTheEnvironment) {
  EXPECT_EQ(EngineOptions::from_env({}).threads, 0);  // 0: every core
  EXPECT_EQ(EngineOptions::from_env({{"MINFER_THREADS", "3"}}).threads, 3);
  for (const char* v : {"100000", "0", "abc"}) {
    EXPECT_EQ(error_of([&] { EngineOptions::from_env({{"MINFER_THREADS", v}}); }),
              std::string("MINFER_THREADS: expected an integer from 1 to 1024, got '") + v + "'");
  }
  // The pool refuses a count beyond the limit whoever asks for it.
  EXPECT_EQ(error_of([] { ThreadPool pool(100000); }),
            "thread pool: asked for 100000 threads, at most 1024");
  EXPECT_EQ(error_of([] { ThreadPool::set_global_threads(100000); }),
            "thread pool: asked for 100000 threads, at most 1024");
  // The global pool starts with the count set before its first use; another count after it is
  // an error, the same one is not.
  ThreadPool::set_global_threads(3);
  EXPECT_EQ(ThreadPool::global().size(), 3);
  EXPECT_EQ(error_of([] { ThreadPool::set_global_threads(3); }), "(no error)");
  EXPECT_EQ(error_of([] { ThreadPool::set_global_threads(2); }),
            "thread pool: the global pool already runs 3 threads; asked for 2");
}
