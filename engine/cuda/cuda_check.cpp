#include "cuda/cuda_check.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "cuda/launch_settings.h"
#include "cuda/pdl.h"

namespace minfer::cuda {
namespace {

std::atomic<bool> g_sync_after_launch{false};  // set_sync_after_launch
std::atomic<double> g_wait_timeout_s{120.0};   // set_wait_timeout

}  // namespace

void set_sync_after_launch(bool on) { g_sync_after_launch.store(on, std::memory_order_relaxed); }

void set_wait_timeout(double seconds) { g_wait_timeout_s.store(seconds, std::memory_order_relaxed); }

void apply_launch_settings(const CudaOptions& o) {
  set_pdl_enabled(o.pdl);
  set_sync_after_launch(o.sync_launches);
  set_wait_timeout(o.wait_timeout_s);
}

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  fail("CUDA error in ", what, " (", base ? base + 1 : file, ":", line, "): ", cudaGetErrorName(e), ": ",
       cudaGetErrorString(e));
}

void check_launch(const char* kernel, cudaStream_t s) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail("CUDA kernel ", kernel, " failed to launch: ", cudaGetErrorString(e));
  if (!g_sync_after_launch.load(std::memory_order_relaxed)) return;
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(s, &cs));
  if (cs == cudaStreamCaptureStatusNone) sync_bounded(s, kernel);
}

namespace {

// Polls `ready` (cudaStreamQuery / cudaEventQuery) until it stops saying cudaErrorNotReady.
template <class Query>
void wait_bounded(Query ready, const char* what) {
  const double limit_s = g_wait_timeout_s.load(std::memory_order_relaxed);
  const auto t0 = std::chrono::steady_clock::now();
  for (int spins = 0;; ++spins) {
    cudaError_t e = ready();
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) {
      fail("CUDA error while waiting for ", what, ": ", cudaGetErrorName(e), ": ", cudaGetErrorString(e));
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit_s)
      fail("the GPU did not finish ", what, " within ", limit_s, " s (MINFER_CUDA_TIMEOUT_S); giving up");
    // Spin briefly (decode steps take ~1 ms), then yield the core.
    if (spins > 2000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

void sync_bounded(cudaStream_t s, const char* what) {
  wait_bounded([s] { return cudaStreamQuery(s); }, what);
}

void event_sync_bounded(cudaEvent_t e, const char* what) {
  wait_bounded([e] { return cudaEventQuery(e); }, what);
}

void record_visible(cudaEvent_t e, cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(s, &status));
  if (status == cudaStreamCaptureStatusActive) CUDA_CHECK(cudaEventRecordWithFlags(e, s, cudaEventRecordExternal));
  else CUDA_CHECK(cudaEventRecord(e, s));
}

unsigned grid_1d(int64_t total, int64_t per_block, const char* kernel) {
  if (total <= 0 || per_block <= 0) fail("CUDA kernel ", kernel, ": empty launch (", total, " items)");
  const int64_t blocks = (total + per_block - 1) / per_block;
  if (blocks > 0x7fffffffLL) fail("CUDA kernel ", kernel, ": ", blocks, " blocks exceed the grid limit");
  return static_cast<unsigned>(blocks);
}

}  // namespace minfer::cuda
