// The step journal's cost per step on the journal's thread (docs/benchmarks.md, "The step journal's cost"):
// encodes and appends a step of the 0.5b preset's decode shape (480 node records with 1x64
// grids, 32-bin histograms and 8 outliers, a device logits summary), as the recorder does after
// every CUDA step. Prints the medians of R repetitions in microseconds.
//   build/tests/minfer-trace-journal-cost [R=1000] [DIR=/tmp]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.h"
#include "format/step_codec.h"
#include "step_journal.h"

using namespace minfer;
using namespace minfer::trace;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1000;
  const std::string dir = argc > 2 ? argv[2] : "/tmp";
  StepData d;
  d.selected = true;
  d.info.phase = Phase::Decode;
  d.info.tokens = {1};
  for (int i = 0; i < 480; ++i) {
    NodeData n;
    n.id = i;
    n.rows = 1;
    n.cols = 896;
    n.summary.grid.values.assign(64, 1.f);
    n.summary.hist.counts.assign(32, 3);
    n.outliers.resize(8);
    d.nodes.push_back(n);
  }
  d.node_gpu.resize(480);
  LogitsData l;
  l.summary = LogitsSummary{};
  l.summary->top.resize(20);
  d.logits = l;

  const auto median_us = [&](auto&& body) {
    std::vector<double> t;
    for (int k = 0; k < reps; ++k) {
      const auto t0 = Clock::now();
      body(k);
      t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
    return t[static_cast<size_t>(reps / 2)];
  };
  try {
    std::vector<char> buf;
    const size_t bytes = encode_step(d, buf).size();
    const double encode = median_us([&](int) { encode_step(d, buf); });
    const std::string path = dir + "/minfer-journal-cost-" + std::to_string(::getpid());
    StepJournal j(path, StepFormat{}, {});
    const double over = median_us([&](int k) {
      j.start_over();
      j.append_step(k, d);
    });
    const double grow = median_us([&](int k) { j.append_step(k, d); });
    j.remove();
    std::printf("{\"step_bytes\": %zu, \"repetitions\": %d, \"encode_us\": %.1f, \"append_start_over_us\": %.1f, "
                "\"append_growing_us\": %.1f}\n",
                bytes, reps, encode, over, grow);
  } catch (const Error& e) {
    std::fprintf(stderr, "minfer-trace-journal-cost: %s\n", e.what());
    return 1;
  }
  return 0;
}
