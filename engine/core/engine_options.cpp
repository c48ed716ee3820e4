#include "core/engine_options.h"

#include "core/thread_pool.h"

namespace minfer {

EngineOptions EngineOptions::from_env(const Environment& env) {
  EngineOptions o;
  o.threads = static_cast<int>(env_int(env, "MINFER_THREADS", 1, kMaxThreads, 0));
  if (env_equals(env, "MINFER_MMQ", "0")) o.prefill = MatmulPath::Float;
  if (env_equals(env, "MINFER_MMQ", "1")) o.prefill = MatmulPath::MMQ;
  o.graph_fusion = !env_equals(env, "MINFER_NO_FUSION", "1");
  CudaOptions& c = o.cuda;
  c.step_graphs = !env_equals(env, "MINFER_NO_CUDA_GRAPH", "1");
  c.step_fusion = !env_equals(env, "MINFER_CUDA_FUSION", "0");
  c.chain = !env_equals(env, "MINFER_CUDA_CHAIN", "0");
  c.mmvq_stream = !env_equals(env, "MINFER_MMVQ_STREAM", "0");
  c.mmvq_direct = !env_equals(env, "MINFER_MMVQ_DIRECT", "0");
  c.mmq_tile = static_cast<int>(env_int(env, "MINFER_MMQ_TILE", 0, 128, 0));
  c.cupti = !env_equals(env, "MINFER_NO_CUPTI", "1");
  c.pdl = !env_equals(env, "MINFER_PDL", "0");
  c.sync_launches = env_equals(env, "MINFER_CUDA_SYNC", "1");
  c.wait_timeout_s = env_number(env, "MINFER_CUDA_TIMEOUT_S", 0.001, 86400, 120.0);
  return o;
}

}  // namespace minfer
