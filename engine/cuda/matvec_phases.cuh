// A diagnostic of the direct decode matvec (mmvq_direct.cu), compiled only with -DMINFER_PHASES
// (scripts/device/matvec_phases.sh builds minfer-bench so): thread 0 of every CTA notes the
// global timer and its SM's clock at entry, after the PDL wait, after the prologue (the Q8_1 row
// and its split copy in shared memory) and at the end (after a barrier: the CTA's last warp),
// with the launch's first weight pointer, group count and grid; minfer-bench writes the records
// to phases.csv and scripts/device/phases_report.py gives per-matrix medians. What it showed on
// the 7B preset (docs/benchmarks.md, session 22): prologues of 2.2-6.7 us (the activation's
// loads queue behind the weights loaded before the wait) and CTAs ending up to 7 us apart.
// Without MINFER_PHASES the marks are empty. Only mmvq_direct.cu includes it (its symbols live there).
#pragma once
#ifdef MINFER_PHASES
#include <cstdio>
#include <vector>

namespace minfer::cuda::phases {

struct Record {
  unsigned long long t[4];  // global timer (ns): entry, after the wait, after the prologue, end
  long long clk[4];         // clock64 at the same points
  const void* w;
  long long n_groups;
  int cta, sm, quantize, grid;
};
constexpr unsigned kCap = 1u << 20;  // records kept (the first ones)
__device__ Record g_records[kCap];
__device__ unsigned int g_count;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace minfer::cuda::phases

namespace minfer::cuda {
// Writes the records so far as CSV (minfer-bench, in the diagnostic build).
void dump_matvec_phases(const char* path) {
  unsigned n = 0;
  cudaDeviceSynchronize();
  cudaMemcpyFromSymbol(&n, phases::g_count, sizeof n);
  n = n < phases::kCap ? n : phases::kCap;
  std::vector<phases::Record> v(n);
  cudaMemcpyFromSymbol(v.data(), phases::g_records, n * sizeof(phases::Record));
  FILE* f = std::fopen(path, "w");
  if (!f) return;
  std::fprintf(f, "g0,g1,g2,g3,c0,c1,c2,c3,w,n_groups,cta,sm,quantize,grid\n");
  for (const auto& r : v)
    std::fprintf(f, "%llu,%llu,%llu,%llu,%lld,%lld,%lld,%lld,%p,%lld,%d,%d,%d,%d\n", r.t[0], r.t[1], r.t[2], r.t[3],
                 r.clk[0], r.clk[1], r.clk[2], r.clk[3], r.w, r.n_groups, r.cta, r.sm, r.quantize, r.grid);
  std::fclose(f);
}
}  // namespace minfer::cuda

#define MINFER_PHASES_BEGIN            \
  phases::Record phase_rec;            \
  phase_rec.t[0] = phases::global_ns(); \
  phase_rec.clk[0] = clock64();
#define MINFER_PHASE_MARK(i)           \
  phase_rec.t[i] = phases::global_ns(); \
  phase_rec.clk[i] = clock64();
#define MINFER_PHASES_END(w_, n_groups_, quantize_)                             \
  __syncthreads();                                                              \
  if (threadIdx.x == 0) {                                                       \
    MINFER_PHASE_MARK(3)                                                        \
    const unsigned slot = atomicAdd(&phases::g_count, 1u);                      \
    unsigned sm_id;                                                             \
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_id));                          \
    phase_rec.w = (w_);                                                         \
    phase_rec.n_groups = (n_groups_);                                           \
    phase_rec.cta = blockIdx.x;                                                 \
    phase_rec.sm = static_cast<int>(sm_id);                                     \
    phase_rec.quantize = (quantize_);                                           \
    phase_rec.grid = gridDim.x;                                                 \
    if (slot < phases::kCap) phases::g_records[slot] = phase_rec;               \
  }
#else
#define MINFER_PHASES_BEGIN
#define MINFER_PHASE_MARK(i)
#define MINFER_PHASES_END(w_, n_groups_, quantize_)
#endif
