// The CUDA module's process-wide switches, from the program's CudaOptions (core/engine_options.h).
// Launchers and waits have no backend, so these hold for the whole process: CudaBackend's
// constructor sets them from its options, minfer-kernel-bench's main from its own; the tests
// that build no backend run with the defaults. Not meant to change while another thread
// launches or waits (a CUDA graph keeps what it was captured with).
#pragma once
#include "core/engine_options.h"

namespace minfer::cuda {

// All of the below, and PDL (pdl.h: set_pdl_enabled), from o.
void apply_launch_settings(const CudaOptions& o);
// check_launch also waits after each eager launch, so a fault names its kernel
// (CudaOptions::sync_launches, MINFER_CUDA_SYNC=1). Off by default.
void set_sync_after_launch(bool on);
// sync_bounded / event_sync_bounded give up after this long (CudaOptions::wait_timeout_s,
// MINFER_CUDA_TIMEOUT_S). 120 s by default.
void set_wait_timeout(double seconds);

}  // namespace minfer::cuda
