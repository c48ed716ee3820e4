#include "core/membw.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace minfer {

double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes, int reps) {
  const size_t n = bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buf(new uint64_t[n]);
  pool.parallel_for(static_cast<int64_t>(n), 1 << 16, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL;
  });
  double best = 0;
  std::vector<uint64_t> sink(static_cast<size_t>(pool.size()) * 8);
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(static_cast<int64_t>(n), 1 << 18, [&](int64_t b, int64_t e, int t) {
      // Four independent accumulators let the loads stream; XOR keeps the compiler honest.
      uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      int64_t i = b;
      for (; i + 4 <= e; i += 4) {
        a0 ^= buf[static_cast<size_t>(i)];
        a1 ^= buf[static_cast<size_t>(i + 1)];
        a2 ^= buf[static_cast<size_t>(i + 2)];
        a3 ^= buf[static_cast<size_t>(i + 3)];
      }
      for (; i < e; ++i) a0 ^= buf[static_cast<size_t>(i)];
      sink[static_cast<size_t>(t) * 8] ^= a0 ^ a1 ^ a2 ^ a3;
    });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / s / 1e9);
  }
  volatile uint64_t keep = sink[0];
  (void)keep;
  return best;
}

}  // namespace minfer
