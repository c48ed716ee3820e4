// Does compute-sanitizer racecheck understand a producer/consumer handoff over named barriers
// (bar.arrive by the producer, bar.sync by the consumer), the pattern of mmq.cu's loader and math
// warps? Three kernels of two warps each pass a shared buffer from warp 1 (writes) to warp 0
// (reads) over 8 rounds:
//   named:  full = barrier 1 (producer arrives, consumer syncs), empty = barrier 2 (the reverse);
//   block:  __syncthreads() between the phases (what racecheck certainly models);
//   racy:   no barrier at all (racecheck must report this one).
// Usage (on the GPU machine): nvcc -arch=sm_90 -o rc racecheck_named_barrier.cu &&
//   for k in named block racy; do compute-sanitizer --tool racecheck ./rc $k; done
// A hazard count above 0 for `named` with 0 for `block` and > 0 for `racy` says the tool reports
// the named-barrier handoff, which the PTX memory model orders (bar.arrive synchronizes with
// bar.sync on the same barrier), i.e. a false positive of the tool, not of the kernel.
#include <cstdio>
#include <cstring>

constexpr int kRounds = 8;

__global__ void named(int* out) {
  __shared__ int buf[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int sum = 0;
  for (int r = 0; r < kRounds; ++r) {
    if (warp == 1) {
      if (r > 0) asm volatile("bar.sync 2, 64;" ::: "memory");  // the consumer has read round r-1
      buf[lane] = r * 32 + lane;
      asm volatile("bar.arrive 1, 64;" ::: "memory");           // round r is written
    } else {
      asm volatile("bar.sync 1, 64;" ::: "memory");
      sum += buf[31 - lane];
      if (r + 1 < kRounds) asm volatile("bar.arrive 2, 64;" ::: "memory");
    }
  }
  if (warp == 0) out[lane] = sum;
}

__global__ void block(int* out) {
  __shared__ int buf[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int sum = 0;
  for (int r = 0; r < kRounds; ++r) {
    if (warp == 1) buf[lane] = r * 32 + lane;
    __syncthreads();
    if (warp == 0) sum += buf[31 - lane];
    __syncthreads();
  }
  if (warp == 0) out[lane] = sum;
}

__global__ void racy(int* out) {
  __shared__ int buf[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int sum = 0;
  for (int r = 0; r < kRounds; ++r) {
    if (warp == 1) buf[lane] = r * 32 + lane;
    if (warp == 0) sum += buf[31 - lane];
  }
  if (warp == 0) out[lane] = sum;
}

int main(int argc, char** argv) {
  const char* k = argc > 1 ? argv[1] : "named";
  int* d;
  cudaMalloc(&d, 32 * sizeof(int));
  if (!strcmp(k, "named")) named<<<1, 64>>>(d);
  else if (!strcmp(k, "block")) block<<<1, 64>>>(d);
  else racy<<<1, 64>>>(d);
  int h[32];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  int want = 0;
  for (int r = 0; r < kRounds; ++r) want += r * 32 + 31;  // lane 0 reads buf[31]
  printf("%s: lane 0 sum %d (expected %d for a race-free run)\n", k, h[0], want);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
