// Measures sustained memory read bandwidth (GB/s) with the thread pool: the floor against which
// decode speed is judged (decode streams every weight once per token).
#pragma once
#include "core/thread_pool.h"

namespace minfer {
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t(1) << 30, int reps = 5);
}  // namespace minfer
