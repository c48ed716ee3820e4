// Would llama.cpp load the GGUFs minfer-gen writes for qwen3 and llama (Llama 3.x)? No
// llama.cpp is built here: its loader's rules were read from its source and are written down
// below as tables, each rule citing the llama.cpp file and function it comes from. Every preset
// of the two families is checked against them by reading what the generator writes with
// minfer's own GGUF reader: the tiny presets as whole files, the real-shape ones (0.6B, 1B, 8B)
// as the exact header generate_model writes first (metadata, vocabulary and tensor infos),
// since making their weights takes minutes.
//
// Source read: ggml-org/llama.cpp at ec98e2002 (December 2025), as vendored in ollama/ollama
// (llama/llama.cpp, commit f63eea3d), whose patches touch none of these rules except that an
// unknown tokenizer.ggml.pre only warns there, where upstream throws (the rules below follow
// upstream). Newer upstream versions move each architecture's tensor list into
// src/models/<arch>.cpp and accept a fused blk.N.attn_qkv in place of attn_q/k/v; the separate
// tensors minfer writes are still what they load. docs/gguf-compat.md says what is and is not
// covered (a real llama.cpp load on a machine is not).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/generator.h"
#include "test_models.h"

using namespace minfer;

namespace {

using VT = GGUFValueType;

// ---------------------------------------------------------------------------------------------
// Rule table 1: metadata keys llama.cpp reads for these two architectures, and the type it reads
// each with. llama_model_loader::get_key (src/llama-model-loader.cpp, GGUFMeta::GKV::get_kv)
// throws "key ... has wrong type" unless the stored type is exactly the type of the variable it
// reads into: a u32 field needs UINT32 (not INT32, not UINT64), a float field FLOAT32.
// "{a}." is the architecture prefix (general.architecture + ".").
// required: the load fails (or, marked "in effect", produces no usable model) without it.
// ---------------------------------------------------------------------------------------------
struct KeyRule {
  const char* key;
  VT type;
  VT elem;               // element type, for ARRAY
  bool required;
  bool per_layer_array;  // an ARRAY[n_layer] of UINT32/INT32 is accepted too (get_key_or_arr)
  const char* source;
};

constexpr VT kNone = VT::UINT8;  // elem of a scalar rule (unused)

constexpr KeyRule kKeyRules[] = {
    // llama_model_loader::llama_model_loader reads the architecture name; llama_model::load_arch
    // (llm_arch_from_string, src/llama-arch.cpp) throws "unknown model architecture" otherwise.
    {"general.architecture", VT::STRING, kNone, true, false, "llama-model-loader.cpp llama_model_loader(); llama-model.cpp load_arch"},
    {"general.name", VT::STRING, kNone, false, false, "llama-model.cpp llama_model::load_hparams"},
    {"general.file_type", VT::UINT32, kNone, false, false, "llama-model-loader.cpp llama_model_loader() (ftype)"},
    // gguf_get_val_u32 asserts the type (ggml/src/gguf.cpp gguf_init_from_file_impl).
    {"general.alignment", VT::UINT32, kNone, false, false, "ggml/src/gguf.cpp gguf_init_from_file_impl"},
    {"split.count", VT::UINT16, kNone, false, false, "llama-model-loader.cpp llama_model_loader()"},
    // llama_model::load_hparams (src/llama-model.cpp), common part.
    {"{a}.context_length", VT::UINT32, kNone, true, false, "llama-model.cpp load_hparams (n_ctx_train)"},
    {"{a}.embedding_length", VT::UINT32, kNone, true, false, "llama-model.cpp load_hparams (n_embd)"},
    {"{a}.block_count", VT::UINT32, kNone, true, false, "llama-model.cpp load_hparams (n_layer)"},
    {"{a}.expert_count", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams (n_expert)"},
    {"{a}.expert_used_count", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams (n_expert_used)"},
    {"{a}.expert_group_count", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams"},
    {"{a}.expert_group_used_count", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams"},
    // Read with required=false, but without them n_ff / n_head are 0 and no tensor shape fits:
    // required in effect.
    {"{a}.feed_forward_length", VT::UINT32, kNone, true, true, "llama-model.cpp load_hparams (get_key_or_arr n_ff_arr)"},
    {"{a}.attention.head_count", VT::UINT32, kNone, true, true, "llama-model.cpp load_hparams (get_key_or_arr n_head_arr)"},
    {"{a}.attention.head_count_kv", VT::UINT32, kNone, false, true, "llama-model.cpp load_hparams (default: n_head)"},
    {"{a}.rope.scaling.finetuned", VT::BOOL, kNone, false, false, "llama-model.cpp load_hparams"},
    {"{a}.rope.scaling.original_context_length", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams"},
    // Optional (default 10000), but both families need theirs (1e6, 500000): required in effect.
    {"{a}.rope.freq_base", VT::FLOAT32, kNone, true, false, "llama-model.cpp load_hparams (rope_freq_base_train)"},
    {"{a}.rope.scaling.type", VT::STRING, kNone, false, false, "llama-model.cpp load_hparams (asserts a known name)"},
    {"{a}.rope.scaling.factor", VT::FLOAT32, kNone, false, false, "llama-model.cpp load_hparams"},
    {"{a}.rope.scale_linear", VT::FLOAT32, kNone, false, false, "llama-model.cpp load_hparams"},
    {"{a}.rope.scaling.attn_factor", VT::FLOAT32, kNone, false, false, "llama-model.cpp load_hparams"},
    {"{a}.attention.key_length", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams (n_embd_head_k, default n_embd/n_head)"},
    {"{a}.attention.value_length", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams (n_embd_head_v, default n_embd/n_head)"},
    {"{a}.rope.dimension_count", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams (n_rot, default n_embd_head_k)"},
    {"{a}.vocab_size", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams (model type only)"},
    {"{a}.classifier.output_labels", VT::ARRAY, VT::STRING, false, false, "llama-model.cpp load_hparams"},
    // llama_model::load_hparams, case LLM_ARCH_LLAMA / LLM_ARCH_QWEN3: required.
    {"{a}.attention.layer_norm_rms_epsilon", VT::FLOAT32, kNone, true, false, "llama-model.cpp load_hparams, case LLM_ARCH_LLAMA / LLM_ARCH_QWEN3"},
    {"{a}.pooling_type", VT::UINT32, kNone, false, false, "llama-model.cpp load_hparams, case LLM_ARCH_QWEN3"},
    // llama_vocab::impl::load (src/llama-vocab.cpp).
    {"tokenizer.ggml.model", VT::STRING, kNone, true, false, "llama-vocab.cpp llama_vocab::impl::load"},
    {"tokenizer.ggml.pre", VT::STRING, kNone, true, false, "llama-vocab.cpp llama_vocab::impl::load (BPE: selects the pre-tokenizer)"},
    {"tokenizer.ggml.token_type_count", VT::UINT32, kNone, false, false, "llama-vocab.cpp llama_vocab::impl::load"},
    {"tokenizer.ggml.add_space_prefix", VT::BOOL, kNone, false, false, "llama-vocab.cpp llama_vocab::impl::load"},
    {"tokenizer.ggml.remove_extra_whitespaces", VT::BOOL, kNone, false, false, "llama-vocab.cpp llama_vocab::impl::load"},
    {"tokenizer.ggml.tokens", VT::ARRAY, VT::STRING, true, false, "llama-vocab.cpp llama_vocab::impl::load (\"cannot find tokenizer vocab\")"},
    // Read as raw int32 / float pointers over n_tokens elements.
    {"tokenizer.ggml.token_type", VT::ARRAY, VT::INT32, false, false, "llama-vocab.cpp llama_vocab::impl::load (const int *)"},
    {"tokenizer.ggml.scores", VT::ARRAY, VT::FLOAT32, false, false, "llama-vocab.cpp llama_vocab::impl::load (const float *)"},
    // gpt2 (BPE) vocabularies: "cannot find tokenizer merges" without it.
    {"tokenizer.ggml.merges", VT::ARRAY, VT::STRING, true, false, "llama-vocab.cpp llama_vocab::impl::load"},
    {"tokenizer.ggml.bos_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.eos_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.eot_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.eom_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.unknown_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.seperator_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.padding_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.mask_token_id", VT::UINT32, kNone, false, false, "llama-vocab.cpp load (special_token_types)"},
    {"tokenizer.ggml.add_bos_token", VT::BOOL, kNone, false, false, "llama-vocab.cpp load (add_bos)"},
    {"tokenizer.ggml.add_eos_token", VT::BOOL, kNone, false, false, "llama-vocab.cpp load (add_eos)"},
    {"tokenizer.ggml.add_sep_token", VT::BOOL, kNone, false, false, "llama-vocab.cpp load (add_sep)"},
    {"tokenizer.chat_template", VT::STRING, kNone, false, false, "llama-model.cpp llama_model_chat_template"},
};

// The special-token id keys (all read as uint32 into the same table): an id past the vocabulary
// only warns and keeps the default there, so an out-of-range id here is a silent wrong token.
constexpr const char* kSpecialIdKeys[] = {
    "tokenizer.ggml.bos_token_id",     "tokenizer.ggml.eos_token_id",       "tokenizer.ggml.eot_token_id",
    "tokenizer.ggml.eom_token_id",     "tokenizer.ggml.unknown_token_id",   "tokenizer.ggml.seperator_token_id",
    "tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id",
};

// ---------------------------------------------------------------------------------------------
// Rule table 2: per architecture, what llama.cpp accepts and what the real checkpoints (as
// llama.cpp's converter writes them) carry, so that llama.cpp reads the same model.
// ---------------------------------------------------------------------------------------------
struct FamilyRule {
  const char* arch;          // general.architecture
  const char* pre;           // tokenizer.ggml.pre (llama-vocab.cpp load: names it maps to the
                             // family's split regex; upstream throws on an unknown one)
  bool rot_must_equal_head;  // llama-model.cpp load_hparams: LLM_ARCH_LLAMA throws "invalid
                             // n_rot" unless rope.dimension_count == n_embd_head_k
  bool takes_rope_freqs;     // llama-model.cpp load_tensors creates rope_freqs.weight (llama);
                             // qwen3 does not: one in the file is an uncreated tensor
  bool takes_biases;         // load_tensors, case LLM_ARCH_LLAMA: optional attn_*/ffn_* biases
  bool add_bos;              // the converter's tokenizer.ggml.add_bos_token (llama-bpe: true)
  const char* bos_text;      // the token the converter records as BOS
  const char* eot_texts[2];  // llama-vocab.cpp load: EOT found by text when no eot_token_id
};

constexpr FamilyRule kFamilies[] = {
    {"qwen3", "qwen2", false, false, false, false, "<|endoftext|>", {"<|im_end|>", "<|endoftext|>"}},
    {"llama", "llama-bpe", true, true, true, true, "<|begin_of_text|>", {"<|eot_id|>", nullptr}},
};

// ---------------------------------------------------------------------------------------------
// llama.cpp's view of a file: the hyperparameters exactly as llama_model::load_hparams derives
// them, and n_vocab as load_tensors takes it (vocab.n_tokens(): the tokens array's length).
// ---------------------------------------------------------------------------------------------
struct LlamaCppHParams {
  int64_t n_embd = 0, n_layer = 0, n_ff = 0, n_head = 0, n_head_kv = 0;
  int64_t n_embd_head_k = 0, n_embd_head_v = 0, n_rot = 0, n_vocab = 0, n_expert = 0;
  int64_t n_embd_k_gqa() const { return n_embd_head_k * n_head_kv; }
  int64_t n_embd_v_gqa() const { return n_embd_head_v * n_head_kv; }
};

// Scalar or (per-layer array) first element, as a plain integer; 0 when absent or unreadable
// (the key rules report why).
int64_t int_or(const GGUFFile& f, const std::string& key, int64_t fallback) {
  const GGUFValue* v = f.find(key);
  if (!v) return fallback;
  if (v->type == VT::ARRAY) {
    if (v->size() == 0 || (v->elem_type != VT::UINT32 && v->elem_type != VT::INT32)) return 0;
    return v->elements()[0].as_int(key);
  }
  return v->is_integer() ? v->as_int(key) : 0;
}

LlamaCppHParams derive(const GGUFFile& f, const std::string& a) {
  LlamaCppHParams h;
  h.n_embd = int_or(f, a + "embedding_length", 0);
  h.n_layer = int_or(f, a + "block_count", 0);
  h.n_ff = int_or(f, a + "feed_forward_length", 0);
  h.n_head = int_or(f, a + "attention.head_count", 0);
  h.n_head_kv = int_or(f, a + "attention.head_count_kv", h.n_head);  // "n_head_kv is optional, default to n_head"
  h.n_expert = int_or(f, a + "expert_count", 0);
  if (h.n_head > 0) {  // uint32 division, as load_hparams
    h.n_embd_head_k = int_or(f, a + "attention.key_length", h.n_embd / h.n_head);
    h.n_embd_head_v = int_or(f, a + "attention.value_length", h.n_embd / h.n_head);
    h.n_rot = int_or(f, a + "rope.dimension_count", h.n_embd_head_k);
  }
  if (const GGUFValue* t = f.find("tokenizer.ggml.tokens"); t && t->type == VT::ARRAY) h.n_vocab = static_cast<int64_t>(t->size());
  return h;
}

// ---------------------------------------------------------------------------------------------
// Rule table 3: the tensors llama_model::load_tensors (src/llama-model.cpp) creates. Each is
// looked up by exact name (names: LLM_TENSOR_NAMES in src/llama-arch.cpp, "blk.%d." for the
// repeating ones) and its shape compared by llama_model_loader::check_tensor_dims: ne[i] equal
// for every listed dimension, 1 beyond ("tensor ... has wrong shape"). A required one that is
// missing throws "missing tensor"; llama_model_loader::done_getting_tensors throws "wrong number
// of tensors" when the file holds any tensor that was not created.
// ---------------------------------------------------------------------------------------------
enum class Need { Required, Optional };
enum class DType {
  Any,  // any ggml type whose block divides ne[0] (checked for every tensor)
  F32,  // 1-D weights: rope_freqs must be F32 (ggml.c ggml_rope_impl asserts it; load_tensors'
        // weight_buft_supported builds that op at load); norms are F32 in every converted or
        // quantized file (llama-quant.cpp quantizes only tensors of 2+ dimensions)
};
struct TensorRule {
  std::string name;
  std::vector<int64_t> ne;
  Need need;
  DType dtype;
  const char* source;
};

std::vector<TensorRule> tensor_rules(const std::string& arch, const LlamaCppHParams& h) {
  std::vector<TensorRule> r;
  const int64_t n_embd = h.n_embd, n_vocab = h.n_vocab, n_ff = h.n_ff;
  const int64_t n_q = h.n_embd_head_k * h.n_head;
  auto add = [&](std::string name, std::vector<int64_t> ne, Need need, DType dt, const char* src) {
    r.push_back({std::move(name), std::move(ne), need, dt, src});
  };
  if (arch == "llama") {
    const char* src = "llama-model.cpp load_tensors, case LLM_ARCH_LLAMA";
    add("token_embd.weight", {n_embd, n_vocab}, Need::Required, DType::Any, src);
    add("output_norm.weight", {n_embd}, Need::Required, DType::F32, src);
    // Absent: token_embd.weight is used again (TENSOR_DUPLICATED), as for tied embeddings.
    add("output.weight", {n_embd, n_vocab}, Need::Optional, DType::Any, src);
    // Created with the layer index, but its name has no "%d": one tensor for every layer,
    // {n_rot/2} (rope_scaling_type_train is not longrope: no rope.scaling.type key).
    add("rope_freqs.weight", {h.n_rot / 2}, Need::Optional, DType::F32, src);
    for (int64_t i = 0; i < h.n_layer; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      add(p + "attn_norm.weight", {n_embd}, Need::Required, DType::F32, src);
      add(p + "attn_q.weight", {n_embd, n_q}, Need::Required, DType::Any, src);
      add(p + "attn_k.weight", {n_embd, h.n_embd_k_gqa()}, Need::Required, DType::Any, src);
      add(p + "attn_v.weight", {n_embd, h.n_embd_v_gqa()}, Need::Required, DType::Any, src);
      add(p + "attn_output.weight", {n_q, n_embd}, Need::Required, DType::Any, src);
      add(p + "attn_q.bias", {n_embd}, Need::Optional, DType::F32, src);
      add(p + "attn_k.bias", {h.n_embd_v_gqa()}, Need::Optional, DType::F32, src);  // n_embd_gqa
      add(p + "attn_v.bias", {h.n_embd_v_gqa()}, Need::Optional, DType::F32, src);
      add(p + "attn_output.bias", {n_embd}, Need::Optional, DType::F32, src);
      add(p + "ffn_norm.weight", {n_embd}, Need::Required, DType::F32, src);
      add(p + "ffn_gate.weight", {n_embd, n_ff}, Need::Required, DType::Any, src);  // n_expert == 0
      add(p + "ffn_down.weight", {n_ff, n_embd}, Need::Required, DType::Any, src);
      add(p + "ffn_up.weight", {n_embd, n_ff}, Need::Required, DType::Any, src);
      add(p + "ffn_gate.bias", {n_ff}, Need::Optional, DType::F32, src);
      add(p + "ffn_down.bias", {n_embd}, Need::Optional, DType::F32, src);
      add(p + "ffn_up.bias", {n_ff}, Need::Optional, DType::F32, src);
    }
  } else if (arch == "qwen3") {
    const char* src = "llama-model.cpp load_tensors, case LLM_ARCH_QWEN3";
    add("token_embd.weight", {n_embd, n_vocab}, Need::Required, DType::Any, src);
    add("output_norm.weight", {n_embd}, Need::Required, DType::F32, src);
    add("output.weight", {n_embd, n_vocab}, Need::Optional, DType::Any, src);  // absent: tied
    add("cls.output.weight", {n_embd, 1}, Need::Optional, DType::Any, src);     // rerank head; n_cls_out 1
    for (int64_t i = 0; i < h.n_layer; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      add(p + "attn_norm.weight", {n_embd}, Need::Required, DType::F32, src);
      add(p + "attn_q.weight", {n_embd, n_q}, Need::Required, DType::Any, src);
      // Both from n_embd_gqa (= n_embd_v_gqa) in this version.
      add(p + "attn_k.weight", {n_embd, h.n_embd_v_gqa()}, Need::Required, DType::Any, src);
      add(p + "attn_v.weight", {n_embd, h.n_embd_v_gqa()}, Need::Required, DType::Any, src);
      add(p + "attn_output.weight", {n_q, n_embd}, Need::Required, DType::Any, src);
      add(p + "attn_k_norm.weight", {h.n_embd_head_k}, Need::Required, DType::F32, src);
      add(p + "attn_q_norm.weight", {h.n_embd_head_k}, Need::Required, DType::F32, src);
      add(p + "ffn_norm.weight", {n_embd}, Need::Required, DType::F32, src);
      add(p + "ffn_gate.weight", {n_embd, n_ff}, Need::Required, DType::Any, src);
      add(p + "ffn_down.weight", {n_ff, n_embd}, Need::Required, DType::Any, src);
      add(p + "ffn_up.weight", {n_embd, n_ff}, Need::Required, DType::Any, src);
    }
  }
  return r;
}

// ggml's block sizes (ggml/src/ggml.c type_traits) for the types minfer writes; the ids are
// ggml's (core/weight_type.h).
int64_t ggml_block_size(WeightType t) {
  switch (t) {
    case WeightType::F32:
    case WeightType::F16:
    case WeightType::BF16: return 1;
    case WeightType::Q4_0:
    case WeightType::Q4_1:
    case WeightType::Q5_0:
    case WeightType::Q5_1:
    case WeightType::Q8_0:
    case WeightType::Q8_1: return 32;
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K:
    case WeightType::Q8_K: return 256;
  }
  return 0;
}

std::string shape(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t k = 0; k < ne.size(); ++k) s += (k ? ", " : "") + std::to_string(ne[k]);
  return s + "]";
}

// check_tensor_dims: the listed dimensions equal, every further one 1.
bool same_dims(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  for (size_t k = 0; k < 4; ++k) {
    const int64_t g = k < got.size() ? got[k] : 1, w = k < want.size() ? want[k] : 1;
    if (g != w) return false;
  }
  return true;
}

// Every rule a file breaks, one line each with the rule's source; empty: llama.cpp's loader
// (at the commit above) takes the file. full_file: the image holds the data section too.
std::vector<std::string> llamacpp_violations(const GGUFFile& f, bool full_file) {
  std::vector<std::string> bad;
  auto fail = [&](const std::string& what, const char* source) { bad.push_back(what + "   [" + source + "]"); };

  // Container (ggml/src/gguf.cpp gguf_init_from_file_impl).
  const char* gguf_src = "ggml/src/gguf.cpp gguf_init_from_file_impl";
  if (f.version() != 3) fail("GGUF version " + std::to_string(f.version()) + " (the converter writes 3)", gguf_src);
  uint64_t expect_offset = 0;
  for (const GGUFTensorInfo& t : f.tensors()) {
    if (t.name.size() >= 64) fail("tensor name '" + t.name + "' is 64 bytes or longer (GGML_MAX_NAME)", gguf_src);
    if (t.ne.size() > 4) fail("tensor '" + t.name + "' has more than 4 dimensions", gguf_src);
    const int64_t blk = ggml_block_size(t.type);
    if (blk == 0 || t.ne.empty() || t.ne[0] % blk != 0)
      fail("tensor '" + t.name + "' row length is not a multiple of its type's block size", gguf_src);
    // Offsets must be exactly the running sum of the earlier tensors' sizes, each padded to
    // the alignment ("tensor ... has offset ..., expected ...").
    if (t.offset != expect_offset)
      fail("tensor '" + t.name + "' has data offset " + std::to_string(t.offset) + ", llama.cpp expects " +
               std::to_string(expect_offset),
           gguf_src);
    expect_offset += (t.nbytes + f.alignment() - 1) / f.alignment() * f.alignment();
    if (full_file && f.data_offset() + t.offset + t.nbytes > f.file_size())
      fail("tensor '" + t.name + "' data is not within the file bounds",
           "llama-model-loader.h llama_tensor_weight::llama_tensor_weight");
  }

  // Architecture.
  const GGUFValue* archv = f.find("general.architecture");
  const std::string arch = archv && archv->type == VT::STRING ? archv->s : "";
  const FamilyRule* fam = nullptr;
  for (const FamilyRule& r : kFamilies)
    if (arch == r.arch) fam = &r;
  if (!fam) {
    fail("general.architecture is '" + arch + "', not qwen3 or llama", "llama-arch.cpp llm_arch_from_string");
    return bad;
  }
  const std::string a = arch + ".";

  // Keys: presence and exact types (table 1).
  for (const KeyRule& r : kKeyRules) {
    std::string key = r.key;
    if (key.rfind("{a}.", 0) == 0) key = a + key.substr(4);
    const GGUFValue* v = f.find(key);
    if (!v) {
      if (r.required) fail("missing key " + key, r.source);
      continue;
    }
    if (r.per_layer_array && v->type == VT::ARRAY) {
      if (v->elem_type != VT::UINT32 && v->elem_type != VT::INT32)
        fail(key + " is an array of " + gguf_value_type_name(v->elem_type) + ", expected UINT32 or INT32", r.source);
      continue;
    }
    if (v->type != r.type) {
      fail(key + " has type " + gguf_value_type_name(v->type) + ", llama.cpp reads it as " + gguf_value_type_name(r.type),
           r.source);
    } else if (r.type == VT::ARRAY && v->elem_type != r.elem) {
      fail(key + " is an array of " + gguf_value_type_name(v->elem_type) + ", llama.cpp reads " +
               gguf_value_type_name(r.elem),
           r.source);
    }
  }
  if (const GGUFValue* v = f.find(a + "rope.scaling.type"); v && v->type == VT::STRING) {
    static const std::set<std::string> known = {"none", "linear", "yarn", "longrope"};
    if (!known.count(v->s)) fail(a + "rope.scaling.type '" + v->s + "' is not one llama.cpp knows", "llama-model.cpp load_hparams");
  }

  // Hyperparameters as llama.cpp derives them.
  const LlamaCppHParams h = derive(f, a);
  if (h.n_expert != 0) fail(a + "expert_count is not 0: llama.cpp then wants expert tensors", "llama-model.cpp load_tensors");
  if (h.n_layer <= 0 || h.n_layer > 512) fail("block_count out of 1..512 (LLAMA_MAX_LAYERS)", "llama-hparams.h");
  if (h.n_head <= 0 || h.n_head_kv <= 0 || h.n_head % h.n_head_kv != 0)
    fail("head_count / head_count_kv: GQA needs head_count a multiple of head_count_kv", "llama-graph.cpp build_attn");
  if (fam->rot_must_equal_head && h.n_rot != h.n_embd_head_k)
    fail("rope.dimension_count " + std::to_string(h.n_rot) + " != head size " + std::to_string(h.n_embd_head_k) +
             " (\"invalid n_rot\")",
         "llama-model.cpp load_hparams, LLM_ARCH_LLAMA");
  if (h.n_rot % 2 != 0) fail("rope.dimension_count is odd", "ggml.c ggml_rope_impl");

  // Tensors (table 3): every created tensor with its exact name and shape, and nothing else.
  const std::vector<TensorRule> rules = tensor_rules(arch, h);
  std::map<std::string, const TensorRule*> by_name;
  for (const TensorRule& r : rules) by_name[r.name] = &r;
  for (const TensorRule& r : rules) {
    const GGUFTensorInfo* t = f.find_tensor(r.name);
    if (!t) {
      if (r.need == Need::Required) fail("missing tensor '" + r.name + "'", r.source);
      continue;
    }
    if (!same_dims(t->ne, r.ne))
      fail("tensor '" + r.name + "' has wrong shape; expected " + shape(r.ne) + ", got " + shape(t->ne), r.source);
    if (r.dtype == DType::F32 && t->type != WeightType::F32)
      fail("tensor '" + r.name + "' is " + name(t->type) + ", expected F32", r.source);
  }
  for (const GGUFTensorInfo& t : f.tensors())
    if (!by_name.count(t.name))
      fail("tensor '" + t.name + "' is not one llama.cpp creates for " + arch + " (\"wrong number of tensors\")",
           "llama-model-loader.cpp done_getting_tensors");

  // Vocabulary (llama-vocab.cpp llama_vocab::impl::load).
  const char* vsrc = "llama-vocab.cpp llama_vocab::impl::load";
  auto str_key = [&](const char* k) { const GGUFValue* v = f.find(k); return v && v->type == VT::STRING ? v->s : std::string(); };
  if (str_key("tokenizer.ggml.model") != "gpt2") fail("tokenizer.ggml.model is not \"gpt2\" (BPE)", vsrc);
  if (str_key("tokenizer.ggml.pre") != fam->pre)
    fail("tokenizer.ggml.pre is '" + str_key("tokenizer.ggml.pre") + "', expected '" + fam->pre + "'", vsrc);
  std::vector<std::string> tokens;
  if (const GGUFValue* v = f.find("tokenizer.ggml.tokens"); v && v->type == VT::ARRAY && v->elem_type == VT::STRING)
    tokens = f.get_string_array("tokenizer.ggml.tokens");
  std::map<std::string, int64_t> id_of;
  for (size_t k = 0; k < tokens.size(); ++k) {
    if (tokens[k].empty()) fail("token " + std::to_string(k) + " is empty", vsrc);
    if (!id_of.emplace(tokens[k], static_cast<int64_t>(k)).second)
      fail("token " + std::to_string(k) + " '" + tokens[k] + "' is a duplicate (GGML_ASSERT id_to_token.size() == token_to_id.size())",
           vsrc);
  }
  for (const char* k : {"tokenizer.ggml.token_type", "tokenizer.ggml.scores"})
    if (const GGUFValue* v = f.find(k); v && v->type == VT::ARRAY && v->size() != tokens.size())
      fail(std::string(k) + " has " + std::to_string(v->size()) + " entries for " + std::to_string(tokens.size()) + " tokens",
           vsrc);
  if (const GGUFValue* v = f.find("tokenizer.ggml.merges"); v && v->type == VT::ARRAY && v->elem_type == VT::STRING) {
    size_t k = 0;
    for (const std::string& m : f.get_string_array("tokenizer.ggml.merges")) {
      if (m.find(' ', 1) == std::string::npos) fail("merge " + std::to_string(k) + " '" + m + "' has no ' ' separator", vsrc);
      ++k;
    }
  }
  // token_type values are include/llama.h's llama_token_type (0 undefined, 1 normal, 2 unknown,
  // 3 control, 4 user-defined, 5 unused, 6 byte); load maps any other to UNDEFINED. Special
  // tokens must be CONTROL, or llama.cpp prints them as text (and, for an EOT it finds by
  // text, warns "control-looking token ... was not control-type").
  std::vector<int64_t> types;
  if (const GGUFValue* v = f.find("tokenizer.ggml.token_type"); v && v->type == VT::ARRAY && v->elem_type == VT::INT32)
    types = f.get_int_array("tokenizer.ggml.token_type");
  for (size_t k = 0; k < types.size(); ++k)
    if (types[k] < 0 || types[k] > 6) {
      fail("token " + std::to_string(k) + " has token_type " + std::to_string(types[k]) + ", not a llama_token_type", vsrc);
      break;
    }
  auto must_be_control = [&](int64_t id, const std::string& what) {
    if (id >= 0 && static_cast<size_t>(id) < types.size() && types[static_cast<size_t>(id)] != 3)
      fail(what + " (token " + std::to_string(id) + ") is not CONTROL (token_type 3)", vsrc);
  };
  for (const char* k : kSpecialIdKeys)
    if (const GGUFValue* v = f.find(k); v && v->type == VT::UINT32) {
      if (v->u >= tokens.size())
        fail(std::string(k) + " = " + std::to_string(v->u) + " is past the vocabulary (ignored with a warning)", vsrc);
      else if (std::string(k) != "tokenizer.ggml.padding_token_id" && std::string(k) != "tokenizer.ggml.unknown_token_id")
        must_be_control(static_cast<int64_t>(v->u), k);
    }
  for (const char* t : fam->eot_texts)
    if (t && id_of.count(t)) must_be_control(id_of[t], t);
  // What the real checkpoints carry (the converter's output), so that llama.cpp reads the same
  // tokenizer: BOS, add_bos, and an EOT it finds by text.
  const GGUFValue* bos = f.find("tokenizer.ggml.bos_token_id");
  if (!bos || bos->type != VT::UINT32 || bos->u >= tokens.size() || tokens[bos->u] != fam->bos_text)
    fail(std::string("tokenizer.ggml.bos_token_id is not ") + fam->bos_text, "convert_hf_to_gguf.py (SpecialVocab)");
  const GGUFValue* add_bos = f.find("tokenizer.ggml.add_bos_token");
  if (!add_bos || add_bos->type != VT::BOOL || (add_bos->u != 0) != fam->add_bos)
    fail(std::string("tokenizer.ggml.add_bos_token is not ") + (fam->add_bos ? "true" : "false"), "convert_hf_to_gguf.py");
  if (!f.find("tokenizer.ggml.eos_token_id")) fail("no tokenizer.ggml.eos_token_id", "convert_hf_to_gguf.py");
  if (!f.find("tokenizer.ggml.eot_token_id")) {
    bool found = false;
    for (const char* t : fam->eot_texts) found = found || (t && id_of.count(t));
    if (!found) fail("no EOT: neither eot_token_id nor a token llama.cpp recognises by text", vsrc);
  }

  // The family as the real checkpoints are (what llama.cpp's converter writes for them).
  const char* conv = "convert_hf_to_gguf.py / gguf-py/gguf/constants.py";
  if (arch == "qwen3") {
    if (!f.find(a + "attention.key_length") || !f.find(a + "attention.value_length"))
      fail("qwen3 without attention.key_length / value_length (head_dim 128 != n_embd/n_head)", conv);
  } else {
    if (!f.find(a + "rope.dimension_count")) fail("llama without rope.dimension_count", conv);
    if (const GGUFValue* v = f.find(a + "vocab_size"); !v || v->type != VT::UINT32 || static_cast<size_t>(v->u) != tokens.size())
      fail("llama.vocab_size missing or not the token count", conv);
  }
  if (!fam->takes_biases)
    for (const GGUFTensorInfo& t : f.tensors())
      if (t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0)
        fail("bias tensor '" + t.name + "' in a " + arch + " file", conv);
  return bad;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += "\n  " + x;
  return s;
}

// Header bytes per preset, made once per test program (the vocabulary import takes a second).
const std::vector<uint8_t>& header_of(const std::string& preset) {
  static std::map<std::string, std::vector<uint8_t>> cache;
  auto it = cache.find(preset);
  if (it != cache.end()) return it->second;
  GenSpec s;
  s.preset = preset;
  s.weights = GenWeights::Q4_K_M;
  s.tokenizer_json = minfer::testing::tokenizer_json(preset_hparams(preset).arch);
  return cache[preset] = generate_model_header(s);
}

bool vocabularies_installed() {
  return std::filesystem::exists(minfer::testing::tokenizer_json(Architecture::Qwen3)) &&
         std::filesystem::exists(minfer::testing::tokenizer_json(Architecture::Llama));
}

#define REQUIRE_VOCABULARIES() \
  MINFER_REQUIRE_MODEL(vocabularies_installed() ? minfer::testing::tokenizer_json() : std::string())

constexpr const char* kPresets[] = {"qwen3-tiny", "qwen3-0.6b", "llama-tiny", "llama-3.2-1b", "llama-3.1-8b"};

}  // namespace

// The tiny presets as whole files, written by generate_model (as minfer-gen writes them) and
// opened with minfer's reader; several weight types, so the mixes' per-tensor types are seen.
TEST(LlamaCppCompat, TinyPresetFilesFollowTheLoaderRules) {
  REQUIRE_VOCABULARIES();
  struct Case { const char* preset; GenWeights w; const char* tag; };
  // (The q8_0 files are the ones test_model_families uses: made once for both programs.)
  for (const Case& c : {Case{"qwen3-tiny", GenWeights::Q4_K_M, "compat-qwen3-tiny-q4km"},
                        Case{"qwen3-tiny", GenWeights::Q8_0, "fam-qwen3-tiny"},
                        Case{"llama-tiny", GenWeights::Q4_K_M, "compat-llama-tiny-q4km"},
                        Case{"llama-tiny", GenWeights::Q8_0, "fam-llama-tiny"}}) {
    const std::string path = minfer::testing::generated_model(c.tag, c.preset, c.w);
    auto f = GGUFFile::open(path);
    const std::vector<std::string> bad = llamacpp_violations(*f, true);
    EXPECT_TRUE(bad.empty()) << c.tag << " breaks llama.cpp's loader rules:" << join(bad);
  }
}

// generate_model_header is byte for byte the start of the file generate_model writes, so the
// real-shape presets' headers below are what minfer-gen would write for them.
TEST(LlamaCppCompat, HeaderIsTheStartOfTheWrittenFile) {
  REQUIRE_VOCABULARIES();
  for (const char* preset : {"qwen3-tiny", "llama-tiny"}) {
    const std::string path = minfer::testing::generated_model(std::string("compat-") + preset + "-q4km", preset, GenWeights::Q4_K_M);
    const std::vector<uint8_t>& header = header_of(preset);
    auto f = GGUFFile::open(path);
    ASSERT_GE(f->file_size(), header.size());
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> start(header.size());
    in.read(reinterpret_cast<char*>(start.data()), static_cast<std::streamsize>(start.size()));
    EXPECT_TRUE(start == header) << preset;
    EXPECT_EQ(f->data_offset(), header.size()) << preset;
  }
}

TEST(LlamaCppCompat, EveryPresetHeaderFollowsTheLoaderRules) {
  REQUIRE_VOCABULARIES();
  for (const char* preset : kPresets) {
    const std::vector<uint8_t>& bytes = header_of(preset);
    auto f = GGUFFile::header_from_memory(bytes.data(), bytes.size(), preset);
    const std::vector<std::string> bad = llamacpp_violations(*f, false);
    EXPECT_TRUE(bad.empty()) << preset << " breaks llama.cpp's loader rules:" << join(bad);
    std::printf("  %-13s %zu keys, %zu tensors, header %zu bytes: %s\n", preset, f->metadata().size(),
                f->tensors().size(), bytes.size(), bad.empty() ? "llama.cpp's rules hold" : "BROKEN");

    // And llama.cpp reads the preset's own shapes from it (load_hparams' derivation).
    const HParams p = preset_hparams(preset);
    const LlamaCppHParams h = derive(*f, f->get_string("general.architecture") + ".");
    EXPECT_EQ(h.n_embd, p.n_embd) << preset;
    EXPECT_EQ(h.n_layer, p.n_layer) << preset;
    EXPECT_EQ(h.n_ff, p.n_ff) << preset;
    EXPECT_EQ(h.n_head, p.n_head) << preset;
    EXPECT_EQ(h.n_head_kv, p.n_head_kv) << preset;
    EXPECT_EQ(h.n_embd_head_k, p.head_dim) << preset;
    EXPECT_EQ(h.n_embd_head_v, p.head_dim) << preset;
    EXPECT_EQ(h.n_rot, p.head_dim) << preset;
    EXPECT_EQ(h.n_vocab, p.n_vocab) << preset;
    // Tied embeddings: no output.weight (llama.cpp duplicates token_embd); Llama 3.1/3.2:
    // rope_freqs.weight (llama.cpp's converter writes it for rope_type llama3).
    EXPECT_EQ(f->find_tensor("output.weight") == nullptr, p.tied_embeddings) << preset;
    EXPECT_EQ(f->find_tensor("rope_freqs.weight") != nullptr, p.arch == Architecture::Llama) << preset;
  }
}

// The checker itself: each kind of mistake a generator could make is reported.
namespace {
// A copy of a header with edits: keys replaced or dropped, tensors renamed, reshaped, retyped,
// dropped or added. Tensors are described only (header() makes no tensor bytes).
struct Edit {
  std::map<std::string, std::optional<GGUFValue>> keys;  // nullopt: drop
  std::map<std::string, std::string> rename;
  std::map<std::string, std::vector<int64_t>> reshape;
  std::map<std::string, WeightType> retype;
  std::set<std::string> drop;
  std::vector<std::pair<std::string, std::vector<int64_t>>> add;  // F32
};

std::vector<uint8_t> edited(const GGUFFile& f, const Edit& e) {
  GGUFWriter w;
  for (const auto& [k, v] : f.metadata()) {
    auto it = e.keys.find(k);
    if (it == e.keys.end()) w.set(k, v);
    else if (it->second) w.set(k, *it->second);
  }
  for (const auto& [k, v] : e.keys)
    if (v && !f.find(k)) w.set(k, *v);
  auto none = [] { return std::vector<uint8_t>(); };
  for (const GGUFTensorInfo& t : f.tensors()) {
    if (e.drop.count(t.name)) continue;
    const std::string n = e.rename.count(t.name) ? e.rename.at(t.name) : t.name;
    const std::vector<int64_t> ne = e.reshape.count(t.name) ? e.reshape.at(t.name) : t.ne;
    const WeightType ty = e.retype.count(t.name) ? e.retype.at(t.name) : t.type;
    w.add_tensor_deferred(n, ne, ty, none);
  }
  for (const auto& [n, ne] : e.add) w.add_tensor_deferred(n, ne, WeightType::F32, none);
  return w.header();
}

// The violations of the edited header; each expected fragment must appear in one of them.
void expect_caught(const std::string& preset, const Edit& e, const std::vector<std::string>& fragments) {
  const std::vector<uint8_t>& bytes = header_of(preset);
  auto f = GGUFFile::header_from_memory(bytes.data(), bytes.size(), preset);
  const std::vector<uint8_t> out = edited(*f, e);
  auto g = GGUFFile::header_from_memory(out.data(), out.size(), preset + " (edited)");
  const std::vector<std::string> bad = llamacpp_violations(*g, false);
  EXPECT_FALSE(bad.empty()) << preset << ": an edited header passed";
  for (const std::string& frag : fragments) {
    bool seen = false;
    for (const std::string& b : bad) seen = seen || b.find(frag) != std::string::npos;
    EXPECT_TRUE(seen) << preset << ": expected a violation mentioning \"" << frag << "\"; got:" << join(bad);
  }
}
}  // namespace

TEST(LlamaCppCompat, CheckerCatchesWhatLlamaCppRejects) {
  REQUIRE_VOCABULARIES();
  {  // A misnamed tensor: llama.cpp misses the right one and cannot place the other.
    Edit e;
    e.rename["blk.1.attn_q_norm.weight"] = "blk.1.attn_q_normalization.weight";
    expect_caught("qwen3-tiny", e, {"missing tensor 'blk.1.attn_q_norm.weight'", "wrong number of tensors"});
  }
  {  // Rows and columns swapped (ne[0] is the row length).
    Edit e;
    e.reshape["blk.0.attn_output.weight"] = {64, 128};
    expect_caught("qwen3-tiny", e, {"'blk.0.attn_output.weight' has wrong shape; expected [128, 64], got [64, 128]"});
  }
  {  // rope_freqs in a qwen3 file: not created there.
    Edit e;
    e.add.push_back({"rope_freqs.weight", {16}});
    expect_caught("qwen3-tiny", e, {"'rope_freqs.weight' is not one llama.cpp creates for qwen3"});
  }
  {  // Qwen2-style biases in a qwen3 file.
    Edit e;
    e.add.push_back({"blk.0.attn_q.bias", {128}});
    expect_caught("qwen3-tiny", e, {"wrong number of tensors"});
  }
  {  // Without key_length, qwen3's head size falls back to n_embd/n_head (16, not 32).
    Edit e;
    e.keys["qwen3.attention.key_length"] = std::nullopt;
    e.keys["qwen3.attention.value_length"] = std::nullopt;
    expect_caught("qwen3-tiny", e, {"attn_q_norm.weight' has wrong shape", "key_length"});
  }
  {  // A u32 key written as another integer type.
    Edit e;
    e.keys["llama.block_count"] = GGUFValue::u64(2);
    e.keys["llama.rope.freq_base"] = GGUFValue::f64(500000);
    expect_caught("llama-tiny", e, {"llama.block_count has type UINT64", "llama.rope.freq_base has type FLOAT64"});
  }
  {  // rope.dimension_count that is not the head size.
    Edit e;
    e.keys["llama.rope.dimension_count"] = GGUFValue::u32(8);
    expect_caught("llama-tiny", e, {"invalid n_rot"});
  }
  {  // A missing required tensor, a missing required key, a quantized norm, an unknown pre.
    Edit e;
    e.drop.insert("blk.1.ffn_down.weight");
    e.keys["llama.attention.layer_norm_rms_epsilon"] = std::nullopt;
    e.retype["output_norm.weight"] = WeightType::F16;
    e.keys["tokenizer.ggml.pre"] = GGUFValue::str("qwen2");
    expect_caught("llama-tiny", e,
                  {"missing tensor 'blk.1.ffn_down.weight'", "missing key llama.attention.layer_norm_rms_epsilon",
                   "'output_norm.weight' is F16, expected F32", "tokenizer.ggml.pre is 'qwen2'"});
  }
  {  // <|eot_id|> typed as a normal token; a token_type llama.cpp does not know.
    const std::vector<uint8_t>& bytes = header_of("llama-tiny");
    auto f = GGUFFile::header_from_memory(bytes.data(), bytes.size(), "llama-tiny");
    std::vector<int64_t> types = f->get_int_array("tokenizer.ggml.token_type");
    std::vector<int32_t> t32(types.begin(), types.end());
    t32[128009] = 1;  // <|eot_id|>
    t32[100] = 9;
    Edit e;
    e.keys["tokenizer.ggml.token_type"] = GGUFValue::i32_array(t32);
    expect_caught("llama-tiny", e, {"<|eot_id|> (token 128009) is not CONTROL", "token 100 has token_type 9"});
  }
  {  // Special ids as INT32 (llama.cpp reads uint32), add_bos off for Llama 3.
    Edit e;
    e.keys["tokenizer.ggml.eos_token_id"] = GGUFValue::i32(128009);
    e.keys["tokenizer.ggml.add_bos_token"] = GGUFValue::boolean(false);
    expect_caught("llama-tiny", e, {"eos_token_id has type INT32", "add_bos_token is not true"});
  }
}
