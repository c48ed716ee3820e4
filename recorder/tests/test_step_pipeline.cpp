// The recorder's step pipeline (formatting on workers, writing in order): every job is written
// exactly once and in submission order even when later jobs format faster; a job's parts format
// on different workers at once and reach the writer in their order; a failing part's
// error reaches the caller; submit() blocks once max_pending jobs are unwritten; idle() says
// whether all is written without waiting. And the
// recorder's steps, formatted in parts on workers, are the same bytes as formatted inline.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "recorder.h"
#include "step_pipeline.h"
#include "synthetic.h"
#include "test_tmp.h"
#include "format/trace_check.h"
#include "format/trace_load.h"

using minfer::trace::StepPipeline;

namespace {
std::string joined(const std::vector<std::string>& parts) {
  std::string all;
  for (const std::string& t : parts) all += t;
  return all;
}
}  // namespace

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
            [&written](std::vector<std::string>& t) { written.push_back(joined(t)); });
      p.drain();
    }
    ASSERT_EQ(written.size(), 200u) << workers << " workers";
    for (int i = 0; i < 200; ++i) EXPECT_EQ(written[static_cast<size_t>(i)], "step " + std::to_string(i));
  }
}

TEST(StepPipeline, ErrorsReachTheCaller) {
  StepPipeline p(2, 4);
  p.submit([] { return std::string("ok"); }, [](std::vector<std::string>&) {});
  p.submit([]() -> std::string { throw std::runtime_error("format failed"); }, [](std::vector<std::string>&) {});
  EXPECT_THROW(
      {
        for (int i = 0; i < 100; ++i) p.submit([] { return std::string("x"); }, [](std::vector<std::string>&) {});
        p.drain();
      },
      std::runtime_error);
  StepPipeline w(2, 4);
  w.submit([] { return std::string("x"); }, [](std::vector<std::string>&) { throw std::runtime_error("write failed"); });
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
          [](std::vector<std::string>&) {});
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

TEST(StepPipeline, IdleSaysWhetherEverythingIsWrittenWithoutWaiting) {
  for (int workers : {0, 2}) {
    std::atomic<bool> release{false};
    StepPipeline p(workers, 4);
    EXPECT_TRUE(p.idle());
    if (workers > 0) {
      p.submit(
          [&] {
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return std::string();
          },
          [](std::vector<std::string>&) {});
      EXPECT_FALSE(p.idle()) << "a job is still formatting";  // returned: it did not wait for it
      release = true;
      p.drain();
    } else {
      p.submit([] { return std::string(); }, [](std::vector<std::string>&) {});  // inline: written at once
    }
    EXPECT_TRUE(p.idle()) << workers << " workers";
  }
  StepPipeline w(2, 4);
  w.submit([] { return std::string("x"); }, [](std::vector<std::string>&) { throw std::runtime_error("write failed"); });
  EXPECT_THROW(
      {
        for (int i = 0; i < 5000 && !w.idle(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      std::runtime_error)
      << "idle() reports the writer's error";
}

// written() counts the jobs written (inline: each as it is submitted); wait_written(n) returns
// once n are, and rethrows the writer's error instead of waiting for a count never reached.
TEST(StepPipeline, WrittenCountsJobsAndWaitWrittenWaitsForThem) {
  StepPipeline inline_p(0, 4);
  inline_p.submit([] { return std::string(); }, [](std::vector<std::string>&) {});
  EXPECT_EQ(inline_p.written(), 1);
  inline_p.wait_written(1);

  std::atomic<bool> release{false};
  StepPipeline p(2, 4);
  for (int i = 0; i < 3; ++i)
    p.submit(
        [&, i] {
          while (i == 1 && !release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          return std::string();
        },
        [](std::vector<std::string>&) {});
  p.wait_written(1);
  EXPECT_EQ(p.written(), 1) << "job 1 is still formatting: nothing after it is written";
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  p.wait_written(3);
  EXPECT_EQ(p.written(), 3);
  releaser.join();

  StepPipeline w(2, 4);
  w.submit([] { return std::string(); }, [](std::vector<std::string>&) { throw std::runtime_error("disk full"); });
  EXPECT_THROW(w.wait_written(1), std::runtime_error);
  EXPECT_EQ(w.written(), 0);
}

namespace {
using Clock = std::chrono::steady_clock;

// Polls pred until it holds or `seconds` pass (tests must not hang on a broken pipeline).
template <class Pred>
bool wait_until(Pred pred, double seconds = 5) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}
}  // namespace

TEST(StepPipeline, WritesMultiPartJobsAsTheirConcatenationInOrder) {
  for (int workers : {0, 1, 4})
    for (int max_pending : {1, 8}) {
      std::vector<std::string> written, expected;
      {
        StepPipeline p(workers, max_pending);
        for (int i = 0; i < 100; ++i) {
          std::vector<StepPipeline::Format> parts;
          std::string all;
          for (int k = 0; k < i % 6; ++k) {  // 0 to 5 parts
            const std::string text = std::to_string(i) + "." + std::to_string(k) + ";";
            all += text;
            parts.push_back([text, k, i] {
              // Early parts format slowest: the later ones finish first.
              if (k == 0 && i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
              return text;
            });
          }
          expected.push_back(all);
          p.submit(std::move(parts), [&written](std::vector<std::string>& t) { written.push_back(joined(t)); });
        }
        p.drain();
      }
      EXPECT_EQ(written, expected) << workers << " workers, max_pending " << max_pending;
    }
}

TEST(StepPipeline, PartsOfOneJobFormatOnDifferentWorkersAtOnce) {
  constexpr int kParts = 4;
  std::atomic<int> started{0};
  std::mutex m;
  std::set<std::thread::id> threads;
  std::string written;
  StepPipeline p(kParts, 1);
  std::vector<StepPipeline::Format> parts;
  for (int k = 0; k < kParts; ++k)
    parts.push_back([&] {
      {
        std::lock_guard<std::mutex> l(m);
        threads.insert(std::this_thread::get_id());
      }
      ++started;
      // Every part waits for all the others to start: only parts running at once get past.
      return std::string(wait_until([&] { return started.load() == kParts; }) ? "+" : "-");
    });
  p.submit(std::move(parts), [&](std::vector<std::string>& t) { written = joined(t); });
  p.drain();
  EXPECT_EQ(written, "++++") << "the parts of one job did not format at the same time";
  EXPECT_EQ(threads.size(), static_cast<size_t>(kParts));
}

TEST(StepPipeline, WorkersTakeTheEarliestJobsPartsFirst) {
  std::atomic<bool> release{false};
  std::mutex m;
  std::vector<std::string> order;
  auto part = [&](std::string name, bool block) -> StepPipeline::Format {
    return [&, name, block] {
      if (block) wait_until([&] { return release.load(); });
      std::lock_guard<std::mutex> l(m);
      order.push_back(name);
      return name;
    };
  };
  std::string written;
  auto write = [&](std::vector<std::string>& t) { written += joined(t); };
  StepPipeline p(1, 4);
  std::vector<StepPipeline::Format> a;
  a.push_back(part("a0", true));  // holds the only worker until b is queued too
  a.push_back(part("a1", false));
  p.submit(std::move(a), write);
  p.submit(part("b0", false), write);
  release = true;
  p.drain();
  EXPECT_EQ(order, (std::vector<std::string>{"a0", "a1", "b0"}));
  EXPECT_EQ(written, "a0a1b0");
}

TEST(StepPipeline, MaxPendingOneWaitsUntilThePreviousJobIsWritten) {
  for (int workers : {1, 3}) {
    std::atomic<bool> release{false}, first_written{false}, first_written_when_second_submitted{false};
    StepPipeline p(workers, 1);
    std::vector<StepPipeline::Format> parts;
    for (int k = 0; k < 3; ++k)
      parts.push_back([&] {
        wait_until([&] { return release.load(); });
        return std::string("x");
      });
    p.submit(std::move(parts), [&](std::vector<std::string>&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a slow write: submit must wait for it too
      first_written = true;
    });
    std::thread producer([&] {
      p.submit([] { return std::string("y"); }, [](std::vector<std::string>&) {});
      first_written_when_second_submitted = first_written.load();
    });
    // Time for a pipeline that does not wait to let the second submit() through.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
    producer.join();
    p.drain();
    EXPECT_TRUE(first_written_when_second_submitted) << workers << " workers: submit() returned before the previous job was written";
  }
}

TEST(StepPipeline, AnErrorInAnyPartReachesTheCaller) {
  for (int workers : {0, 3})
    for (int bad : {0, 1, 2}) {
      std::atomic<int> writes{0};
      StepPipeline p(workers, 1);
      auto job = [&](int failing) {
        std::vector<StepPipeline::Format> parts;
        for (int k = 0; k < 3; ++k)
          parts.push_back([k, failing]() -> std::string {
            if (k == failing) throw std::runtime_error("part failed");
            return "ok";
          });
        return parts;
      };
      auto write = [&](std::vector<std::string>&) { ++writes; };
      p.submit(job(-1), write);
      EXPECT_THROW(
          {
            p.submit(job(bad), write);
            p.drain();
          },
          std::runtime_error)
          << workers << " workers, part " << bad;
      EXPECT_EQ(writes.load(), 1) << "a job with a failed part must not be written";
      if (workers > 0) {  // the pipeline stays stopped: later calls see the error too
        EXPECT_THROW(p.submit(job(-1), write), std::runtime_error);
        EXPECT_THROW(p.drain(), std::runtime_error);
        EXPECT_EQ(writes.load(), 1);
      }
    }
}

namespace {
// A synthetic run recorded with the given backend in meta (cuda: formatted on workers; cpu:
// inline), as the file's text up to the timings, start_ms masked (it is the wall clock).
std::string recorded_steps(const std::string& backend, const minfer::synth::Run& r) {
  const std::string dir = minfer::trace::testing::temp_dir("step_pipeline_" + backend);
  minfer::trace::RecorderOptions o;
  o.path = dir + "/t.json";
  nlohmann::json meta = r.paired ? minfer::synth::paired_meta() : minfer::synth::meta();
  meta["backend"] = backend;
  meta["recorded_at"] = "2024-01-01T00:00:00Z";
  {
    minfer::trace::Recorder rec(o, meta, minfer::synth::token_text);
    minfer::synth::run(rec, r);
    rec.finish({{"load_ms", 1.0}});
  }
  const nlohmann::json t = minfer::trace::load_trace(o.path);
  std::string errs;
  for (const auto& e : minfer::trace::validate_trace(t)) errs += e + "\n";
  EXPECT_EQ(errs, "") << backend;
  // Every step holds every node of its graph once, in id order: no part lost, doubled or moved.
  EXPECT_EQ(t["steps"].size(), static_cast<size_t>(r.n_decode + 1));
  for (const auto& s : t["steps"]) {
    const auto g = std::find_if(t["graphs"].begin(), t["graphs"].end(), [&](const auto& g) { return g["id"] == s["graph"]; });
    EXPECT_NE(g, t["graphs"].end());
    if (g == t["graphs"].end()) continue;
    EXPECT_GT((*g)["nodes"].size(), 64u) << "too few nodes to split a step in several parts";
    EXPECT_EQ(s["nodes"].size(), (*g)["nodes"].size());
    for (size_t i = 0; i < s["nodes"].size(); ++i) EXPECT_EQ(s["nodes"][i]["id"], static_cast<int>(i));
  }
  std::ifstream f(o.path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  text = text.substr(0, text.rfind("\n],\"timings\":"));
  text = std::regex_replace(text, std::regex("\"start_ms\":[-0-9.e+]+"), "\"start_ms\":0");
  return std::regex_replace(text, std::regex("\"backend\":\"[a-z]+\""), "\"backend\":\"?\"");
}
}  // namespace

TEST(RecorderSteps, FormattedInPartsOnWorkersTheSameAsInline) {
  minfer::synth::Run r;
  r.shapes.n_layer = 5;  // > 100 nodes: several node parts per step
  r.paired = true;
  const std::string inline_text = recorded_steps("cpu", r), workers_text = recorded_steps("cuda", r);
  EXPECT_EQ(inline_text.size(), workers_text.size());
  EXPECT_TRUE(inline_text == workers_text) << "the steps formatted on workers differ from the inline ones";
}
