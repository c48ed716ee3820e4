// The model's weights on the GPU: every GGUF tensor uploaded once in its own type (one
// allocation), small vectors (norms, biases) also as f32, and on request the "W16 cache":
// quantized matmul weights dequantized once to f16 for the tensor-core prefill path.
#pragma once
#include <cuda_fp16.h>

#include <map>
#include <string>

#include "cuda/device_buffer.h"
#include "model/model.h"

namespace minfer::cuda {

struct DeviceWeight {
  WeightType type = WeightType::F32;
  int64_t rows = 0, cols = 0;
  const void* data = nullptr;     // in `type`, row-major [rows][cols]
  const __half* w16 = nullptr;    // the W16 cache copy, when built
};

class DeviceWeights {
 public:
  DeviceWeights(const Model& m, cudaStream_t s);
  const DeviceWeight& get(const std::string& name) const;  // Error when absent
  const float* f32(const std::string& name) const;         // a norm/bias as f32
  // Dequantizes every quantized matmul weight (not the LM head, which always runs as a matvec)
  // to f16 once, but those that matmul_dequant takes (Q4_0 / Q8_0 on sm_90: no copy).
  void build_w16_cache(const Model& m, cudaStream_t s);
  // Whether matmul_dequant takes every quantized prefill matmul weight (and there is one): the
  // f16 path then needs no W16 cache, and is the CUDA backend's default prefill.
  bool matmul_dequant_takes_all(const Model& m) const;
  size_t weight_bytes() const { return blob_.bytes() + small_.bytes(); }
  size_t w16_bytes() const { return w16_.bytes(); }

 private:
  bool takes(const WeightView& w) const;  // matmul_dequant takes w's device copy

  DeviceBuffer blob_, small_, w16_;
  std::map<std::string, DeviceWeight> by_name_;
  std::map<std::string, const float*> f32_;
};

}  // namespace minfer::cuda
