#include "cuda/device_weights.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "cpu/ops.h"
#include "cuda/cuda_check.h"
#include "cuda/dequant.h"
#include "cuda/matmul_dequant.h"

namespace minfer::cuda {
namespace {

constexpr size_t kAlign = 256;  // every tensor starts 256-byte aligned (wide loads)
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The vectors kernels read as f32: norms, biases (qwen2), qwen3's per-head Q/K norms, Llama
// 3.1's RoPE frequency divisors. Absent ones (no bias, no QK-norm, no rope_freqs) are skipped.
std::vector<const WeightView*> small_vectors(const Model& m) {
  std::vector<const WeightView*> v{&m.output_norm};
  if (m.rope_freqs.present()) v.push_back(&m.rope_freqs);
  for (const auto& l : m.layers)
    for (const WeightView* w : {&l.attn_norm, &l.bq, &l.bk, &l.bv, &l.ffn_norm, &l.q_norm, &l.k_norm})
      if (w->present()) v.push_back(w);
  return v;
}

std::vector<const WeightView*> prefill_matmul_weights(const Model& m) {
  std::vector<const WeightView*> v;
  for (const auto& l : m.layers)
    for (const WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) v.push_back(w);
  return v;
}

}  // namespace

DeviceWeights::DeviceWeights(const Model& m, cudaStream_t s) {
  // Every tensor of the file, in its own type, at aligned offsets of one allocation.
  const auto& tensors = m.file->tensors();
  size_t total = 0;
  for (const auto& t : tensors) total += align_up(t.nbytes);
  blob_.alloc(total, "the model's weights");
  std::map<std::string, const void*> where;
  size_t off = 0;
  for (const auto& t : tensors) {
    uint8_t* dst = blob_.as<uint8_t>() + off;
    CUDA_CHECK(cudaMemcpyAsync(dst, t.data, t.nbytes, cudaMemcpyHostToDevice, s));
    where[t.name] = dst;
    off += align_up(t.nbytes);
  }
  auto add = [&](const WeightView& w) {
    auto it = where.find(w.name);
    if (it == where.end()) fail("cuda: weight '", w.name, "' is not among the file's tensors");
    by_name_[w.name] = DeviceWeight{w.type, w.rows, w.cols, it->second, nullptr};
  };
  add(m.token_embd);
  add(m.output_norm);
  add(m.output);  // tied embeddings: token_embd.weight again (Model::output is its view)
  if (m.rope_freqs.present()) add(m.rope_freqs);
  for (const auto& l : m.layers)
    for (const WeightView* w : {&l.attn_norm, &l.wq, &l.bq, &l.wk, &l.bk, &l.wv, &l.bv, &l.wo, &l.ffn_norm,
                                &l.w_gate, &l.w_up, &l.w_down, &l.q_norm, &l.k_norm})
      if (w->present()) add(*w);  // optional weights (biases, QK-norm) of the other families are empty

  // Norm weights and biases as f32 (any float type in the file), as the CPU backend reads them.
  const auto vecs = small_vectors(m);
  size_t n_small = 0;
  for (const WeightView* w : vecs) n_small += align_up(static_cast<size_t>(w->rows * w->cols) * sizeof(float));
  small_.alloc(n_small, "norm weights and biases (f32)");
  std::vector<float> host;
  off = 0;
  for (const WeightView* w : vecs) {
    host.resize(static_cast<size_t>(w->rows * w->cols));
    cpu::weight_to_f32(*w, host.data());
    float* dst = reinterpret_cast<float*>(small_.as<uint8_t>() + off);
    CUDA_CHECK(cudaMemcpyAsync(dst, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    // The host vector is reused: wait for this copy (pageable memory copies may return early).
    sync_bounded(s, "uploading norm weights");
    f32_[w->name] = dst;
    off += align_up(host.size() * sizeof(float));
  }
  sync_bounded(s, "uploading the weights");
}

const DeviceWeight& DeviceWeights::get(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) fail("cuda: no device copy of weight '", name, "'");
  return it->second;
}

const float* DeviceWeights::f32(const std::string& name) const {
  auto it = f32_.find(name);
  if (it == f32_.end()) fail("cuda: no f32 copy of vector weight '", name, "'");
  return it->second;
}

bool DeviceWeights::takes(const WeightView& w) const {
  return matmul_dequant_applies(w.type, w.cols, by_name_.at(w.name).data);
}

bool DeviceWeights::matmul_dequant_takes_all(const Model& m) const {
  bool any = false;
  for (const WeightView* w : prefill_matmul_weights(m)) {
    if (!is_quantized(w->type)) continue;  // float weights take cuBLAS on both paths
    if (!takes(*w)) return false;
    any = true;
  }
  return any;
}

void DeviceWeights::build_w16_cache(const Model& m, cudaStream_t s) {
  // The quantized weights that matmul_dequant does not take (it dequantizes in the kernel).
  std::vector<const WeightView*> mats;
  for (const WeightView* w : prefill_matmul_weights(m))
    if (is_quantized(w->type) && !takes(*w)) mats.push_back(w);
  size_t total = 0;
  for (const WeightView* w : mats) total += align_up(static_cast<size_t>(w->rows * w->cols) * sizeof(__half));
  if (total == 0) return;  // float weights go to cuBLAS as they are
  w16_.alloc(total, "the W16 cache (weights dequantized to f16 for the f16 prefill path)");
  size_t off = 0;
  for (const WeightView* w : mats) {
    DeviceWeight& d = by_name_.at(w->name);
    __half* dst = reinterpret_cast<__half*>(w16_.as<uint8_t>() + off);
    dequant_to_f16(w->type, d.data, w->rows, w->cols, dst, s);
    d.w16 = dst;
    off += align_up(static_cast<size_t>(w->rows * w->cols) * sizeof(__half));
  }
  sync_bounded(s, "building the W16 cache");
}

}  // namespace minfer::cuda
