#include "cli/backend_choice.h"

#include <cstdio>

#include "core/error.h"
#include "core/thread_pool.h"
#include "cpu/cpu_backend.h"
#if MINFER_HAVE_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/device_info.h"
#endif

namespace minfer {

double read_bandwidth_gbs(Backend& b) {
#if MINFER_HAVE_CUDA
  if (auto* c = dynamic_cast<CudaBackend*>(&b)) return c->read_bandwidth_gbs();
#endif
  if (auto* c = dynamic_cast<CpuBackend*>(&b)) return c->read_bandwidth_gbs();
  fail("read_bandwidth_gbs: backend '", b.name(), "' has no bandwidth probe");
}

std::string parse_backend_flag(const std::string& v) {
  if (v != "auto" && v != "cpu" && v != "cuda") fail("--backend: expected auto, cpu or cuda, got '", v, "'");
  return v;
}

namespace {

bool gpu_usable(std::string* why) {
#if MINFER_HAVE_CUDA
  return cuda::device_usable(why);
#else
  *why = "this build of minfer has no CUDA backend (built without the CUDA toolkit)";
  return false;
#endif
}

void announce(const Backend& b, const std::string& choice, bool quiet) {
  if (quiet) return;
  std::fprintf(stderr, "backend: %s%s on %s, %s prefill%s\n", b.name().c_str(),
               choice == "auto" ? " (auto)" : "", b.device().c_str(), b.matmul_path_label().c_str(),
               b.step_graphs() ? ", decode as one CUDA graph" : "");
  print_backend_memory(b, "at start");
}

}  // namespace

bool is_memory_measurement(const std::string& what) { return what == "device_in_use"; }

int64_t memory_categories_total(const MemoryReport& m) {
  int64_t total = 0;
  for (const auto& [what, bytes] : m)
    if (!is_memory_measurement(what)) total += bytes;
  return total;
}

void print_backend_memory(const Backend& b, const char* when) {
  const MemoryReport mem = b.memory();
  if (mem.empty()) return;
  std::string parts, measured;
  for (const auto& [what, bytes] : mem) {
    char buf[96];
    if (is_memory_measurement(what)) {
      std::snprintf(buf, sizeof buf, "; %s %.1f MiB", what == "device_in_use" ? "device in use" : what.c_str(), bytes / 1048576.0);
      measured += buf;
      continue;
    }
    std::snprintf(buf, sizeof buf, "%s%s %.1f MiB", parts.empty() ? "" : ", ", what.c_str(), bytes / 1048576.0);
    parts += buf;
  }
  std::fprintf(stderr, "gpu memory %s: %.1f MiB (%s)%s\n", when, memory_categories_total(mem) / 1048576.0, parts.c_str(),
               measured.c_str());
}

std::unique_ptr<Backend> make_backend(const std::string& choice, const Model& m, std::optional<MatmulPath> path,
                                      const CudaOptions& cuda_options, ThreadPool* pool, bool quiet) {
  std::string why;
  // Every family Model::load accepts (qwen2, qwen3, llama) runs on both backends; any other
  // architecture never gets here (Model::load names it and the supported ones).
  const bool cuda_ok = choice != "cpu" && gpu_usable(&why);
  const bool use_cuda = choice == "cuda" || (choice == "auto" && cuda_ok);
  std::unique_ptr<Backend> b;
  if (use_cuda) {
    if (!cuda_ok) fail("--backend cuda: ", why);
#if MINFER_HAVE_CUDA
    b = std::make_unique<CudaBackend>(m, path, cuda_options);
#else
    (void)cuda_options;
#endif
  } else {
    if (choice == "auto" && !quiet) std::fprintf(stderr, "backend: auto picks cpu: %s\n", why.c_str());
    b = std::make_unique<CpuBackend>(m, path.value_or(MatmulPath::MMQ), pool ? *pool : ThreadPool::global());
  }
  announce(*b, choice, quiet);
  return b;
}

}  // namespace minfer
