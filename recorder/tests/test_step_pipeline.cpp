// The recorder's step pipeline (formatting on workers, writing in order): every job is written
// exactly once and in submission order even when later jobs format faster, a failing job's
// error reaches the caller, and submit() blocks once max_pending jobs are queued.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "step_pipeline.h"

using minfer::trace::StepPipeline;

TEST(StepPipeline, WritesInSubmissionOrder) {
  for (int workers : {0, 1, 4}) {
    std::vector<std::string> written;
    {
      StepPipeline p(workers, 8);
      for (int i = 0; i < 200; ++i)
        p.submit(
            [i] {
              // Early jobs format slowest: the writer must still keep the order.
              if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
              return "step " + std::to_string(i);
            },
            [&written](std::string& t) { written.push_back(t); });
      p.drain();
    }
    ASSERT_EQ(written.size(), 200u) << workers << " workers";
    for (int i = 0; i < 200; ++i) EXPECT_EQ(written[static_cast<size_t>(i)], "step " + std::to_string(i));
  }
}

TEST(StepPipeline, ErrorsReachTheCaller) {
  StepPipeline p(2, 4);
  p.submit([] { return std::string("ok"); }, [](std::string&) {});
  p.submit([]() -> std::string { throw std::runtime_error("format failed"); }, [](std::string&) {});
  EXPECT_THROW(
      {
        for (int i = 0; i < 100; ++i) p.submit([] { return std::string("x"); }, [](std::string&) {});
        p.drain();
      },
      std::runtime_error);
  StepPipeline w(2, 4);
  w.submit([] { return std::string("x"); }, [](std::string&) { throw std::runtime_error("write failed"); });
  EXPECT_THROW(w.drain(), std::runtime_error);
}

TEST(StepPipeline, BoundsTheQueue) {
  std::atomic<bool> release{false};
  std::atomic<int> submitted{0};
  StepPipeline p(1, 3);
  std::thread producer([&] {
    for (int i = 0; i < 6; ++i) {
      p.submit(
          [&] {
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return std::string();
          },
          [](std::string&) {});
      ++submitted;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(submitted.load(), 3) << "submit() must block with 3 jobs queued";
  release = true;
  producer.join();
  p.drain();
  EXPECT_EQ(submitted.load(), 6);
}
