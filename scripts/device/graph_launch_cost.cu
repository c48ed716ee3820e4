// Host cost of cudaGraphLaunch by graph feature (an open finding of issue 9: a traced decode
// step's launch takes 51-85 us, an untraced one ~3 us; docs/benchmarks.md, session 10). Each
// variant captures 150 tiny kernels plus one feature the recorder's graphs use, then times 300
// launches (the stream idle) and 300 back to back. Then the shape of a traced decode step
// (session 11's hypothesis, not yet run): two graphs alternating on two streams, each with a
// ~300 us side branch (the summaries' tail) and external event record/wait nodes linking them,
// launched as chained decode launches them, the previous launch of the same graph possibly still
// running. Run by hand on the GPU machine:
//   nvcc -arch=sm_90 -O2 -o /tmp/graph_launch_cost scripts/device/graph_launch_cost.cu && /tmp/graph_launch_cost
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void k(float* p) { if (threadIdx.x == 0) p[blockIdx.x] += 1.0f; }
__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
int main() {
  cudaStream_t s, side[2]; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (auto& x : side) CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  float* d; CK(cudaMalloc(&d, 1 << 20)); int* h; CK(cudaMallocHost(&h, 1 << 20));
  cudaEvent_t ext, extw, fork, join[2];
  CK(cudaEventCreateWithFlags(&ext, cudaEventDisableTiming)); CK(cudaEventCreateWithFlags(&extw, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (auto& j : join) CK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
  CK(cudaEventRecord(extw, s)); CK(cudaStreamSynchronize(s));
  const char* names[] = {"plain 150", "+6 forks (1 side)", "+6 forks (2 sides)", "+memcpy D2H pinned", "+memcpy D2D", "+ext record", "+ext wait", "+event record (timing, internal)", "all"};
  for (int v = 0; v < 9; ++v) {
    cudaGraph_t g; CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const bool all = v == 8;
    if (v == 6 || all) CK(cudaStreamWaitEvent(s, extw, cudaEventWaitExternal));
    for (int i = 0; i < 150; ++i) {
      k<<<4, 32, 0, s>>>(d);
      if ((v == 1 || v == 2 || all) && i % 25 == 24) {
        const int n = (v == 1) ? 1 : 2;
        CK(cudaEventRecord(fork, s));
        for (int j = 0; j < n; ++j) { CK(cudaStreamWaitEvent(side[j], fork, 0)); k<<<4, 32, 0, side[j]>>>(d + 64); CK(cudaEventRecord(join[j], side[j])); }
        for (int j = 0; j < n; ++j) CK(cudaStreamWaitEvent(s, join[j], 0));
      }
    }
    if (v == 3 || all) CK(cudaMemcpyAsync(h, d, 4096, cudaMemcpyDeviceToHost, s));
    if (v == 4) CK(cudaMemcpyAsync(d + 1024, d, 4096, cudaMemcpyDeviceToDevice, s));
    if (v == 5 || all) CK(cudaEventRecordWithFlags(ext, s, cudaEventRecordExternal));
    if (v == 7) CK(cudaEventRecord(join[0], s));
    CK(cudaStreamEndCapture(s, &g));
    size_t nn = 0; cudaGraphGetNodes(g, nullptr, &nn);
    cudaGraphExec_t ex; CK(cudaGraphInstantiate(&ex, g, 0));
    std::vector<double> t;
    for (int r = 0; r < 300; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      CK(cudaGraphLaunch(ex, s));
      t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      CK(cudaStreamSynchronize(s));
    }
    // Back to back (the previous launch still running), as in chained decode.
    std::vector<double> b;
    for (int r = 0; r < 300; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      CK(cudaGraphLaunch(ex, s));
      b.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      if (r % 2) CK(cudaStreamSynchronize(s));
    }
    std::sort(t.begin(), t.end()); std::sort(b.begin(), b.end());
    printf("%-34s nodes %3zu  launch p50 %6.1f us p90 %6.1f | busy p50 %6.1f p90 %6.1f\n", names[v], nn, t[150], t[270], b[150], b[270]);
    cudaGraphExecDestroy(ex); cudaGraphDestroy(g);
  }

  // Alternating lanes: graph L (L = 0, 1) runs on lane L, waits (external) for the other lane's
  // tail_done, runs 150 kernels, records its step end, forks a tail (a spin of `tail_us` on
  // side[L] and a copy to pinned memory) that records its own tail_done, and joins it back.
  // Launches go L = 0, 1, 0, 1, ... as chained decode launches them.
  int clock_khz = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  cudaStream_t lane[2];
  for (auto& x : lane) CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  cudaEvent_t tail_done[2], step_end[2];
  for (int l = 0; l < 2; ++l) {
    CK(cudaEventCreateWithFlags(&tail_done[l], cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&step_end[l], cudaEventDisableTiming));
    CK(cudaEventRecord(tail_done[l], lane[l]));
  }
  for (int tail_us : {0, 300, 600}) {
    cudaGraphExec_t ex[2];
    size_t nn = 0;
    for (int l = 0; l < 2; ++l) {
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(lane[l], cudaStreamCaptureModeThreadLocal));
      CK(cudaStreamWaitEvent(lane[l], tail_done[l ^ 1], cudaEventWaitExternal));
      for (int i = 0; i < 150; ++i) k<<<4, 32, 0, lane[l]>>>(d);
      CK(cudaEventRecord(fork, lane[l]));
      CK(cudaStreamWaitEvent(side[l], fork, 0));
      if (tail_us > 0) spin<<<1, 1, 0, side[l]>>>(static_cast<long long>(tail_us) * clock_khz / 1000);
      CK(cudaMemcpyAsync(h + 64 * l, d, 256, cudaMemcpyDeviceToHost, side[l]));
      CK(cudaEventRecordWithFlags(tail_done[l], side[l], cudaEventRecordExternal));
      CK(cudaEventRecordWithFlags(step_end[l], lane[l], cudaEventRecordExternal));
      CK(cudaEventRecord(join[l], side[l]));
      CK(cudaStreamWaitEvent(lane[l], join[l], 0));  // a capture must join every fork
      CK(cudaStreamEndCapture(lane[l], &g));
      cudaGraphGetNodes(g, nullptr, &nn);
      CK(cudaGraphInstantiate(&ex[l], g, 0));
      cudaGraphDestroy(g);
    }
    std::vector<double> t;
    for (int r = 0; r < 400; ++r) {
      const int l = r % 2;
      // Chained decode launches step r once step r-2's token is read: r-2 ran this same graph,
      // whose tail may still be running.
      if (r >= 2) CK(cudaEventSynchronize(step_end[l]));
      auto t0 = std::chrono::steady_clock::now();
      CK(cudaGraphLaunch(ex[l], lane[l]));
      t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    CK(cudaDeviceSynchronize());
    std::sort(t.begin(), t.end());
    printf("alternating, tail %3d us  nodes %3zu  launch p50 %6.1f us p90 %6.1f max %6.1f\n", tail_us, nn, t[200],
           t[360], t.back());
    for (auto& e : ex) cudaGraphExecDestroy(e);
  }
  return 0;
}
