// Benchmark of the CPU matmul paths (not built by CMake; see the build line below).
//   1. memory bandwidth: a streaming read of a buffer far larger than the last-level cache;
//   2. GEMV (nt = 1, the decode case) GB/s of weight bytes for Q4_0 / Q8_0 at the
//      Qwen2.5-0.5B shapes, cycling over enough copies of a matrix that none stays cached;
//   3. a whole decode token of a Qwen2.5-0.5B-shaped model (24 layers of q,k,v,o,gate,up,down
//      + the 151936x896 output projection) against the bandwidth floor;
//   4. prefill (nt = 64, 512): MMQ vs float path vs a naive dequantize + triple loop.
// Build (from the repository root, after building minfer_engine in build-X):
//   g++ -std=c++20 -O2 -march=native -Iengine recorder/programs/bench_matmul.cpp
//       build-X/engine/libminfer_engine.a -lpthread -o bench_matmul
// Run:   MINFER_THREADS=2 ./bench_matmul [--quick | --hot]
// Wall-time figures need an otherwise idle machine; the per-CPU-second figures are printed
// too because a shared, oversubscribed machine makes wall time mostly waiting for a core.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <ctime>
#include <vector>

#include "core/engine_options.h"
#include "core/environment.h"
#include "core/thread_pool.h"
#include "cpu/matmul.h"
#include "quant/quant.h"
#include "quant/vec_dot_paths.h"

using namespace minfer;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Streaming read of `bytes` with every pool thread summing its share; best of `reps`, GB/s by
// wall time and by the busiest thread's CPU time (the latter means something on a shared,
// oversubscribed machine where wall time includes waiting for a core).
struct Bandwidth {
  double wall = 0, cpu = 0;
};
Bandwidth read_bandwidth(ThreadPool& pool, size_t bytes, int reps) {
  std::vector<uint64_t> buf(bytes / 8);
  pool.parallel_for(static_cast<int64_t>(buf.size()), 1 << 16, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint64_t>(i) * 2654435761u;
  });
  Bandwidth best;
  std::vector<uint64_t> sums(static_cast<size_t>(pool.size()) * 8);
  std::vector<double> cpu(static_cast<size_t>(pool.size()) * 8);
  for (int r = 0; r < reps; ++r) {
    std::fill(cpu.begin(), cpu.end(), 0.0);
    const auto t0 = Clock::now();
    pool.parallel_for(static_cast<int64_t>(buf.size()), 1 << 20, [&](int64_t b, int64_t e, int th) {
      const double c0 = thread_cpu_seconds();
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t i = b; i + 4 <= e; i += 4) {
        s0 += buf[i];
        s1 += buf[i + 1];
        s2 += buf[i + 2];
        s3 += buf[i + 3];
      }
      sums[th * 8] += s0 + s1 + s2 + s3;
      cpu[th * 8] += thread_cpu_seconds() - c0;
    });
    best.wall = std::max(best.wall, static_cast<double>(bytes) / seconds_since(t0) / 1e9);
    best.cpu = std::max(best.cpu, static_cast<double>(bytes) / *std::max_element(cpu.begin(), cpu.end()) / 1e9);
  }
  uint64_t total = 0;
  for (auto s : sums) total += s;
  if (total == 42) std::printf(" ");  // keeps the reads alive
  return best;
}

std::vector<uint8_t> random_matrix(WeightType wt, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> row(static_cast<size_t>(n_in));
  const size_t rb = row_bytes(wt, n_in);
  std::vector<uint8_t> w(rb * static_cast<size_t>(n_out));
  for (int64_t o = 0; o < n_out; ++o) {  // 64 distinct rows, then repeats: fast to make
    uint8_t* dst = w.data() + rb * static_cast<size_t>(o);
    if (o < 64) {
      for (auto& v : row) v = nd(rng);
      quantize_row(wt, row.data(), dst, n_in);
    } else {
      std::memcpy(dst, w.data() + rb * static_cast<size_t>(o % 64), rb);
    }
  }
  return w;
}

std::vector<float> random_acts(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = nd(rng);
  return x;
}

struct Shape {
  const char* what;
  int64_t n_out, n_in;
};

// By wall time, and by CPU time spread over the pool's threads (what the threads would take
// with a core each; meaningful when the machine is oversubscribed).
struct Rate {
  double wall = 0, cpu = 0;
};

// GEMV GB/s over copies totalling >= 1 GiB so every call reads its weights from DRAM.
Rate gemv_gbps(ThreadPool& pool, WeightType wt, Shape s, int reps) {
  const auto one = random_matrix(wt, s.n_out, s.n_in, 3);
  const size_t copies = std::max<size_t>(2, (size_t(1) << 30) / one.size());
  std::vector<uint8_t> all(one.size() * copies);
  for (size_t c = 0; c < copies; ++c) std::memcpy(all.data() + c * one.size(), one.data(), one.size());
  const auto x = random_acts(s.n_in, 4);
  std::vector<float> y(static_cast<size_t>(s.n_out));
  Rate best;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    for (size_t c = 0; c < copies; ++c)
      matmul_mmq(all.data() + c * one.size(), wt, s.n_out, s.n_in, x.data(), 1, nullptr, y.data(), pool);
    best.wall = std::max(best.wall, static_cast<double>(all.size()) / seconds_since(t0) / 1e9);
    best.cpu = std::max(best.cpu, static_cast<double>(all.size()) * pool.size() / (process_cpu_seconds() - c0) / 1e9);
  }
  return best;
}

// Kernel ceiling: one thread, a 896x896 matrix that stays in L2, GB/s of weight bytes.
void hot_gemv(WeightType wt) {
  ThreadPool one(1);
  const auto w = random_matrix(wt, 896, 896, 3);
  const auto x = random_acts(896, 4);
  std::vector<float> y(896);
  // The fastest of many short runs: a run that was not preempted shows the kernel's ceiling
  // even on a busy machine.
  double best = 0;
  for (int r = 0; r < 400; ++r) {
    const auto t0 = Clock::now();
    matmul_mmq(w.data(), wt, 896, 896, x.data(), 1, nullptr, y.data(), one);
    best = std::max(best, static_cast<double>(w.size()) / seconds_since(t0) / 1e9);
  }
  std::printf("gemv %-4s hot (L2-resident 896x896, 1 thread, best of 400) %6.1f GB/s\n", name(wt), best);
}

// One decode token of a Qwen2.5-0.5B-shaped model: every matrix once, in layer order.
void decode_token(ThreadPool& pool, WeightType wt, Bandwidth bandwidth, int reps) {
  const Shape layer[] = {{"q", 896, 896}, {"k", 128, 896}, {"v", 128, 896}, {"o", 896, 896},
                         {"gate", 4864, 896}, {"up", 4864, 896}, {"down", 896, 4864}};
  struct M {
    std::vector<uint8_t> w;
    Shape s;
  };
  std::vector<M> ms;
  for (int l = 0; l < 24; ++l)
    for (const auto& s : layer) ms.push_back({random_matrix(wt, s.n_out, s.n_in, 10 + l), s});
  ms.push_back({random_matrix(wt, 151936, 896, 99), {"output", 151936, 896}});
  size_t bytes = 0;
  for (const auto& m : ms) bytes += m.w.size();
  const auto x = random_acts(4864, 5);
  std::vector<float> y(151936);
  std::vector<double> times, cpu_times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    for (const auto& m : ms)
      matmul_mmq(m.w.data(), wt, m.s.n_out, m.s.n_in, x.data(), 1, nullptr, y.data(), pool);
    times.push_back(seconds_since(t0));
    cpu_times.push_back((process_cpu_seconds() - c0) / pool.size());
  }
  std::sort(times.begin(), times.end());
  std::sort(cpu_times.begin(), cpu_times.end());
  const double med = times[times.size() / 2], med_cpu = cpu_times[cpu_times.size() / 2];
  const double floor_tps = bandwidth.wall * 1e9 / static_cast<double>(bytes);
  const double floor_cpu = bandwidth.cpu * 1e9 / static_cast<double>(bytes);
  std::printf("decode %-4s weights %.1f MB: wall median %.1f ms/token = %.1f tokens/s (%.2f GB/s), floor %.1f "
              "tokens/s -> %.0f%% of floor | by CPU time %.1f tokens/s (%.2f GB/s), floor %.1f -> %.0f%%\n",
              name(wt), bytes / 1e6, med * 1e3, 1 / med, bytes / med / 1e9, floor_tps, 100.0 / med / floor_tps,
              1 / med_cpu, bytes / med_cpu / 1e9, floor_cpu, 100.0 / med_cpu / floor_cpu);
}

void naive(const float* w, int64_t n_out, int64_t n_in, const float* x, int64_t nt, float* y) {
  for (int64_t t = 0; t < nt; ++t)
    for (int64_t o = 0; o < n_out; ++o) {
      float s = 0;
      for (int64_t k = 0; k < n_in; ++k) s += w[o * n_in + k] * x[t * n_in + k];
      y[t * n_out + o] = s;
    }
}

void prefill(ThreadPool& pool, WeightType wt, Shape s, int64_t nt, bool with_naive) {
  const auto w = random_matrix(wt, s.n_out, s.n_in, 7);
  const auto x = random_acts(s.n_in * nt, 8);
  std::vector<float> y(static_cast<size_t>(s.n_out * nt));
  const double flop = 2.0 * s.n_out * s.n_in * nt;
  auto best_of = [&](auto&& fn) {
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      fn();
      best = std::min(best, seconds_since(t0));
    }
    return best;
  };
  const double t_mmq = best_of([&] { matmul_mmq(w.data(), wt, s.n_out, s.n_in, x.data(), nt, nullptr, y.data(), pool); });
  const double t_flt = best_of([&] { matmul_float(w.data(), wt, s.n_out, s.n_in, x.data(), nt, nullptr, y.data(), pool); });
  std::printf("prefill %-4s %-6s %5lldx%-5lld nt=%-4lld  mmq %7.1f GFLOP/s  float %7.1f GFLOP/s",
              name(wt), s.what, (long long)s.n_out, (long long)s.n_in, (long long)nt, flop / t_mmq / 1e9,
              flop / t_flt / 1e9);
  if (with_naive) {
    std::vector<float> wd(static_cast<size_t>(s.n_out * s.n_in));
    const double t_naive = best_of([&] {
      for (int64_t o = 0; o < s.n_out; ++o)
        dequantize_row(wt, w.data() + o * row_bytes(wt, s.n_in), wd.data() + o * s.n_in, s.n_in);
      naive(wd.data(), s.n_out, s.n_in, x.data(), nt, y.data());
    });
    std::printf("  naive (1 thread) %6.1f GFLOP/s", flop / t_naive / 1e9);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ThreadPool::set_global_threads(EngineOptions::from_env(process_environment()).threads);  // MINFER_THREADS
  ThreadPool& pool = ThreadPool::global();
  ThreadPool one(1);
  std::printf("threads %d, SIMD dots: %s\n", pool.size(), simd_dot_isa());
  double load[3] = {0, 0, 0};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    std::fclose(f);
  }
  std::printf("load average %.2f %.2f %.2f (wall-time figures are only meaningful when it is below the core count)\n",
              load[0], load[1], load[2]);
  const Bandwidth bw1 = read_bandwidth(one, size_t(2) << 30, quick ? 2 : 5);
  const Bandwidth bwp = read_bandwidth(pool, size_t(2) << 30, quick ? 2 : 5);
  std::printf("memory read bandwidth (2 GiB stream): 1 thread %.1f GB/s (%.1f per CPU-second), "
              "%d threads %.1f GB/s (%.1f per busiest thread's CPU-second)\n",
              bw1.wall, bw1.cpu, pool.size(), bwp.wall, bwp.cpu);
  for (WeightType wt : {WeightType::Q4_0, WeightType::Q8_0, WeightType::Q5_0, WeightType::Q4_1,
                        WeightType::F16})
    hot_gemv(wt);
  if (argc > 1 && std::string(argv[1]) == "--hot") return 0;
  const Shape shapes[] = {{"output", 151936, 896}, {"ffn_up", 4864, 896}, {"down", 896, 4864},
                          {"attn_q", 896, 896}, {"attn_k", 128, 896}};
  for (WeightType wt : {WeightType::Q4_0, WeightType::Q8_0})
    for (const auto& s : shapes) {
      const Rate g = gemv_gbps(pool, wt, s, quick ? 2 : 5);
      std::printf("gemv %-4s %-7s %6lldx%-5lld wall %6.1f GB/s (%.0f%% of bandwidth) | by CPU time %6.1f GB/s (%.0f%%)\n",
                  name(wt), s.what, (long long)s.n_out, (long long)s.n_in, g.wall, 100 * g.wall / bwp.wall, g.cpu,
                  100 * g.cpu / bwp.cpu);
    }
  for (WeightType wt : {WeightType::Q4_0, WeightType::Q8_0}) decode_token(pool, wt, bwp, quick ? 3 : 9);
  for (WeightType wt : {WeightType::Q4_0, WeightType::Q8_0, WeightType::Q4_K, WeightType::F16})
    for (int64_t nt : {64, 512}) prefill(pool, wt, {"ffn_down", 896, 4864}, nt, nt == 64);
  return 0;
}
