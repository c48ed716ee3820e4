// Programmatic dependent launch (PDL): the next kernel of a stream is launched, and its CTAs are
// placed on the SMs, while the current one drains, so a chain of small dependent kernels (a
// decode step: ~170 latency-bound launches) does not pay a full launch gap between kernels.
//
// THE CORRECTNESS RULE. A kernel launched through launch_pdl (attribute
// cudaLaunchAttributeProgrammaticStreamSerialization) may start before the previous kernel in
// the stream has finished: as soon as every CTA of that kernel has executed
// pdl_launch_dependents() or exited. Nothing the previous kernel writes is guaranteed visible
// until pdl_wait() returns, and pdl_wait() returns only once the previous kernel has completed
// and its memory is flushed. Therefore every kernel launched through launch_pdl:
//   1. executes pdl_wait() before its first global-memory read of anything an earlier kernel
//      wrote (activations, KV cache, scratch, the token ids and positions) AND before its first
//      global-memory write or atomic (write-after-read: the previous kernel may still be
//      reading the buffer this one overwrites);
//   2. executes it on every path, before any early return (simplest: in every thread, as the
//      first statement). A CTA that exits without waiting could let the grid complete before
//      its predecessor, and the kernels after it would then no longer be ordered behind that
//      predecessor;
//   3. may read constant data before the wait: weights (no kernel writes them during a step),
//      kernel parameters, L2 prefetch hints of weight bytes. Only where simple and obviously
//      right; everything else comes after the wait;
//   4. calls pdl_launch_dependents() early, after the wait (so at most two grids are in flight:
//      the next kernel's CTAs sit in their pdl_wait and cannot trigger a third).
//   5. One exception to 1, used by attention_decode alone: what kernels BEFORE the previous one
//      wrote may be read before the wait. The previous kernel triggers only after its own wait,
//      so when this one runs, every kernel before the previous one has completed (rule 4 and the
//      transitivity below). attention_decode reads the step's position and issues L2 prefetch
//      hints for the KV-cache rows of earlier steps there; the row of this step, which the
//      kernel before it (the rope / KV store) writes, is read after the wait.
// Dependencies stay transitive: kernel N+1's wait returns only after kernel N completed, and N
// completed only after its own wait returned, i.e. after N-1 completed, and so on.
// Mixing is safe: a kernel launched without the attribute (<<<...>>>, cuBLAS, the recorder's
// summary kernels) waits for the full completion of the work before it as usual; a PDL kernel
// after such a kernel starts at the earliest when that kernel's CTAs have all exited, and its
// pdl_wait still orders the memory. Copies, memsets and events in the stream are ordered as
// usual. Under stream capture the attribute becomes a programmatic edge of the CUDA graph.
// MINFER_PDL=0 (or set_pdl_enabled(false)) launches the same kernels without the attribute: then
// pdl_wait() and pdl_launch_dependents() return at once and the stream serializes fully.
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/pdl.h"

namespace minfer::cuda {

// Waits until the previous kernel of the stream has completed and its writes are visible (at
// once when this kernel was launched without the PDL attribute).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel of the stream (when launched with the attribute) be scheduled once every
// CTA of this grid has called it or exited. Implies nothing about memory visibility.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// Launches kernel<<<grid, block, smem, s>>>(args...) through cudaLaunchKernelEx, with
// programmatic stream serialization when pdl_enabled(), then check_launch(name, s). The kernel
// must follow the rule above. Capturable (no allocation, no sync).
template <class... P, class... A>
void launch_pdl(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                A&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  const bool pdl = pdl_enabled();
  cfg.attrs = pdl ? attr : nullptr;
  cfg.numAttrs = pdl ? 1 : 0;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // the error is reported here; do not leave it for the next check
    fail("CUDA kernel ", name, " failed to launch: ", cudaGetErrorString(e));
  }
  check_launch(name, s);
}

}  // namespace minfer::cuda
