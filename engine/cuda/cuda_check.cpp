#include "cuda/cuda_check.h"

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/parse_number.h"

namespace minfer::cuda {

void throw_cuda_error(cudaError_t e, const char* what, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  fail("CUDA error in ", what, " (", base ? base + 1 : file, ":", line, "): ", cudaGetErrorName(e), ": ",
       cudaGetErrorString(e));
}

void check_launch(const char* kernel, cudaStream_t s) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail("CUDA kernel ", kernel, " failed to launch: ", cudaGetErrorString(e));
  static const bool sync = [] {
    const char* v = std::getenv("MINFER_CUDA_SYNC");
    return v && std::string(v) == "1";
  }();
  if (!sync) return;
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(s, &cs));
  if (cs == cudaStreamCaptureStatusNone) sync_bounded(s, kernel);
}

namespace {

// Polls `ready` (cudaStreamQuery / cudaEventQuery) until it stops saying cudaErrorNotReady.
template <class Query>
void wait_bounded(Query ready, const char* what) {
  static const double limit_s = env_number("MINFER_CUDA_TIMEOUT_S", 0.001, 86400, 120.0);
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
