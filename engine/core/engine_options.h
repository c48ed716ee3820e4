// Every knob of the engine, with its default and the environment variable that sets it, in one
// object. A program's main reads the environment once (EngineOptions::from_env on
// process_environment(), core/environment.h) and passes the options down: the prefill path and
// the CUDA options to the backends' constructors (make_backend, CudaBackend), graph fusion to
// make_graph and GenerateOptions, the thread count to the global pool
// (ThreadPool::set_global_threads). No library below the mains reads the environment.
#pragma once
#include <cstdint>
#include <optional>

#include "core/environment.h"

namespace minfer {

// The prefill's matmul path: int8 MMQ, or the float path (f32 GEMM on the CPU, f16 dequant +
// tensor-core GEMM on CUDA). Decode always takes the quantized GEMV.
enum class MatmulPath { MMQ, Float };

// The CUDA backend's knobs (engine/cuda). The first six are the backend's own; the last four
// are switches of the whole CUDA module, read by launchers and waits that have no backend: a
// CudaBackend sets them from its options when it is built (cuda/launch_settings.h), as does
// minfer-kernel-bench's main.
struct CudaOptions {
  bool step_graphs = true;      // MINFER_NO_CUDA_GRAPH=1: decode steps run eagerly, not replayed as one CUDA graph
  bool step_fusion = true;      // MINFER_CUDA_FUSION=0: the unfused one-row decode kernels
  bool chain = true;            // MINFER_CUDA_CHAIN=0: every greedy decode token fed from the host
  bool mmvq_stream = true;      // MINFER_MMVQ_STREAM=0: decode matvecs without the streaming kernel
  bool mmvq_direct = true;      // MINFER_MMVQ_DIRECT=0: Q4_0/Q8_0 streaming matvecs through the ring kernel
  int mmq_tile = 0;             // MINFER_MMQ_TILE=128|64|32|16 forces the MMQ prefill's tile; 0: its rule
  // The widest input a fused decode matvec quantizes in its own prologue (0: cuda::kFusedMaxInput,
  // also the most it takes); wider ones read a Q8_1 row. No variable: tests narrow it so that a
  // small model takes the path of 7B's FFN down.
  int64_t fused_max_input = 0;
  bool cupti = true;            // MINFER_NO_CUPTI=1: no CUPTI kernel records
  bool pdl = true;              // MINFER_PDL=0: kernels launched without programmatic dependent launch
  bool sync_launches = false;   // MINFER_CUDA_SYNC=1: wait after each eager launch (a fault names its kernel)
  double wait_timeout_s = 120;  // MINFER_CUDA_TIMEOUT_S (0.001 to 86400): the bound on every wait for the GPU
};

struct EngineOptions {
  // MINFER_MMQ=0: the float path; MINFER_MMQ=1: MMQ. Unset: the backend's default (make_backend):
  // MMQ, but on an sm_90 GPU the f16 path when matmul_dequant takes every quantized prefill weight.
  std::optional<MatmulPath> prefill;
  bool graph_fusion = true;  // MINFER_NO_FUSION=1: graphs without fused nodes
  int threads = 0;           // MINFER_THREADS (1 to 1024): the global pool's threads; 0: every core
  CudaOptions cuda;

  // Reads and checks every variable above. A switch keeps the meaning it always had: only the
  // value shown turns it (MINFER_MMQ=0; any other value is the default); a number goes through
  // core/parse_number.h, and a bad one is an Error naming the variable, its range and the text
  // ("MINFER_THREADS: expected an integer from 1 to 1024, got 'abc'"). Unset or empty: the
  // default.
  static EngineOptions from_env(const Environment& env);
};

}  // namespace minfer
