// Host cost of cudaGraphLaunch by graph feature (an open finding of issue 9: a traced decode
// step's launch takes 51-85 us, an untraced one ~3 us; docs/benchmarks.md, session 10). Each
// variant captures 150 tiny kernels plus one feature the recorder's graphs use, then times 300
// launches (the stream idle) and 300 back to back. Run by hand on the GPU machine:
//   nvcc -arch=sm_90 -O2 -o /tmp/graph_launch_cost scripts/device/graph_launch_cost.cu && /tmp/graph_launch_cost
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void k(float* p) { if (threadIdx.x == 0) p[blockIdx.x] += 1.0f; }
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
  return 0;
}
