// --backend auto|cpu|cuda for every tool: one place that picks, builds and announces a backend.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "exec/backend.h"
#include "model/model.h"

namespace minfer {

class ThreadPool;

// "auto", "cpu" or "cuda"; anything else is an Error naming the flag.
std::string parse_backend_flag(const std::string& value);
// auto = cuda when a usable GPU exists (else cpu, saying why). cuda without a usable GPU or in a
// build without the CUDA toolkit is an Error saying why (never a silent CPU run). Prints the choice
// and, for cuda, the GPU memory it holds to stderr unless quiet. pool: the CPU backend's threads
// (the global pool when null).
// "gpu memory: 330.3 MiB (weights 265.5 MiB, ...); device in use 820.0 MiB" on stderr: the sum
// of the backend's categories, then its driver measurement when it has one; nothing for a
// backend that reports no device memory (cpu).
void print_backend_memory(const Backend& b, const char* when);
// A MemoryReport entry that is a measurement of the whole device ("device_in_use": total - free
// from the driver, CUDA context and other processes included), not a category of what the
// backend allocated: it is never added into the categories' sum.
bool is_memory_measurement(const std::string& what);
int64_t memory_categories_total(const MemoryReport& m);  // the sum of the categories only

// The streaming read bandwidth of the memory b's weights live in (GB/s: the decode floor), by
// its backend's own probe (host memory on cpu, device memory on cuda). Not part of Backend: a
// benchmark, not compute, asked by the programs alone.
double read_bandwidth_gbs(Backend& b);

// path: the prefill's (EngineOptions::prefill); unset, the backend's default (the CPU's: MMQ; the
// CUDA backend's: CudaBackend). cuda_options: the CUDA backend's (the program's
// EngineOptions::cuda); a cpu backend has none.
std::unique_ptr<Backend> make_backend(const std::string& choice, const Model& m, std::optional<MatmulPath> path,
                                      const CudaOptions& cuda_options, ThreadPool* pool = nullptr,
                                      bool quiet = false);

}  // namespace minfer
