// Where a step's GPU time went, by kernel family: the kernel's base name without namespaces,
// template arguments and parameters, so mmvq_kernel<Q4_0, 1> and mmvq_kernel<Q8_0, 4> are one
// row (minfer-bench's per-token breakdown of a decode step). A reading of the kernel records the
// recorder receives (the CUPTI probe is engine/probes/cuda/kernel_profiler.h), so it sits here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "exec/observer.h"

namespace minfer::trace {

// "void minfer::cuda::(anonymous namespace)::mmvq_kernel<(minfer::WeightType)2, 1>(Args)" ->
// "mmvq_kernel"; a name that is not a demangled C++ signature (a mangled or cuBLAS name) stays.
std::string kernel_family(const std::string& demangled);

struct KernelFamily {
  std::string name;
  int launches = 0;
  double total_us = 0;  // sum of the launches' durations
};

struct KernelFamilies {
  std::vector<KernelFamily> families;  // by total_us, largest first (ties: by name)
  int launches = 0;
  double sum_us = 0;   // sum of every kernel's duration
  double span_us = 0;  // first kernel start to last kernel end
};

// The step's kernel records grouped by family; empty when the step has none.
KernelFamilies kernel_families(const std::vector<KernelRecord>& kernels);

}  // namespace minfer::trace
