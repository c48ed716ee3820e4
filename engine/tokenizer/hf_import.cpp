// import_hf_tokenizer: HF tokenizer.json (+ tokenizer_config.json next to it, when present)
// -> the GGUF tokenizer.ggml.* keys, as llama.cpp's converter writes them for Qwen and Llama 3.
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"

namespace minfer {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail(path, ": not valid JSON: ", e.what());
  }
}

// Every "Regex" pattern in the pre-tokenizer tree.
void collect_patterns(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    if (node.contains("pattern") && node["pattern"].is_object() && node["pattern"].contains("Regex"))
      out.push_back(node["pattern"]["Regex"].get<std::string>());
    for (const auto& [k, v] : node.items()) collect_patterns(v, out);
  } else if (node.is_array()) {
    for (const auto& v : node) collect_patterns(v, out);
  }
}

// A special-token field of tokenizer_config.json: a string, {"content": ...} or null.
std::string token_name(const json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return "";
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

}  // namespace

void import_hf_tokenizer(const std::string& path, int64_t vocab_size, GGUFWriter& out) {
  const json j = read_json(path);
  try {
    const json& model = j.at("model");
    if (model.contains("type") && model["type"] != "BPE")
      fail(path, ": model.type is ", model["type"].dump(), "; only BPE is supported");
    std::vector<std::string> patterns;
    collect_patterns(j.value("pre_tokenizer", json()), patterns);
    const std::optional<PreTokenizer> pre =
        patterns.size() == 1 ? pre_tokenizer_from_hf_pattern(patterns[0]) : std::nullopt;
    if (!pre)
      fail(path, ": pre_tokenizer is neither the Qwen2 nor the Llama 3 split (found ", patterns.size(), " regex patterns)");
    const bool has_normalizer = j.contains("normalizer") && !j["normalizer"].is_null();
    const bool nfc = has_normalizer && j["normalizer"].value("type", "") == "NFC";
    if (has_normalizer && !nfc)
      fail(path, ": normalizer is ", j["normalizer"].dump(), "; minfer's tokenizer applies NFC only");
    if (nfc && !info(*pre).nfc)
      fail(path, ": normalizer is NFC, but minfer's ", info(*pre).gguf_name, " tokenizer does not normalize");
    if (model.value("ignore_merges", false) && !info(*pre).ignore_merges)
      fail(path, ": model.ignore_merges is true, but minfer's ", info(*pre).gguf_name, " tokenizer applies every merge");

    std::vector<std::string> tokens(static_cast<size_t>(std::max<int64_t>(vocab_size, 0)));
    std::vector<int32_t> types(tokens.size(), static_cast<int32_t>(TokenType::Unused));
    std::vector<bool> assigned(tokens.size(), false);
    std::map<std::string, int32_t> id_of;
    auto place = [&](int64_t id, const std::string& text, TokenType type, bool may_replace) {
      if (id < 0 || id >= vocab_size)
        fail(path, ": token '", text, "' has id ", id, ", outside the vocabulary size ", vocab_size);
      if (assigned[id] && !may_replace) fail(path, ": two tokens have id ", id);
      tokens[id] = text;
      types[id] = static_cast<int32_t>(type);
      assigned[id] = true;
      id_of[text] = static_cast<int32_t>(id);
    };
    for (const auto& [text, id] : model.at("vocab").items()) place(id.get<int64_t>(), text, TokenType::Normal, false);
    // Added tokens are matched literally in text: control when special, user-defined otherwise.
    for (const json& a : j.value("added_tokens", json::array()))
      place(a.at("id").get<int64_t>(), a.at("content").get<std::string>(),
            a.value("special", false) ? TokenType::Control : TokenType::UserDefined, true);
    for (size_t id = 0; id < tokens.size(); ++id)
      if (!assigned[id]) tokens[id] = "[PAD" + std::to_string(id) + "]";

    // Merges come as "a b" strings (older files) or ["a", "b"] pairs (tokenizers >= 0.20).
    std::vector<std::string> merges;
    merges.reserve(model.at("merges").size());
    for (const json& m : model.at("merges")) {
      if (m.is_string()) {
        merges.push_back(m.get<std::string>());
      } else {
        std::string a = m.at(0).get<std::string>(), b = m.at(1).get<std::string>();
        if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
          fail(path, ": merge ", m.dump(), " contains a space and cannot be stored as 'a b'");
        merges.push_back(a + " " + b);
      }
    }

    json config = json::object();
    std::filesystem::path config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config_path)) config = read_json(config_path.string());
    auto lookup = [&](const std::string& name) -> int64_t {
      auto it = id_of.find(name);
      return it == id_of.end() ? -1 : it->second;
    };
    int64_t endoftext = lookup("<|endoftext|>");
    int64_t bos = lookup(token_name(config, "bos_token"));
    if (bos < 0) bos = endoftext;  // Qwen has no BOS; converters record <|endoftext|>
    int64_t eos = lookup(token_name(config, "eos_token"));
    if (eos < 0) eos = endoftext;
    int64_t pad = lookup(token_name(config, "pad_token"));
    if (pad < 0) pad = eos;

    // Validate before writing anything: the same checks from_gguf will make.
    const bool add_bos = config.value("add_bos_token", info(*pre).add_bos);
    TokenizerVocab check{tokens, types, merges, static_cast<int32_t>(bos), static_cast<int32_t>(eos),
                         static_cast<int32_t>(pad), -1, *pre, add_bos, path};
    make_bpe_tokenizer(std::move(check));

    out.set("tokenizer.ggml.model", GGUFValue::str("gpt2"));
    out.set("tokenizer.ggml.pre", GGUFValue::str(info(*pre).gguf_name));
    out.set("tokenizer.ggml.tokens", GGUFValue::str_array(tokens));
    out.set("tokenizer.ggml.token_type", GGUFValue::i32_array(types));
    out.set("tokenizer.ggml.merges", GGUFValue::str_array(merges));
    if (bos >= 0) out.set("tokenizer.ggml.bos_token_id", GGUFValue::u32(static_cast<uint32_t>(bos)));
    if (eos >= 0) out.set("tokenizer.ggml.eos_token_id", GGUFValue::u32(static_cast<uint32_t>(eos)));
    if (pad >= 0) out.set("tokenizer.ggml.padding_token_id", GGUFValue::u32(static_cast<uint32_t>(pad)));
    out.set("tokenizer.ggml.add_bos_token", GGUFValue::boolean(add_bos));
    if (config.contains("chat_template") && config["chat_template"].is_string())
      out.set("tokenizer.chat_template", GGUFValue::str(config["chat_template"].get<std::string>()));
  } catch (const json::exception& e) {
    fail(path, ": unexpected tokenizer.json layout: ", e.what());
  }
}

}  // namespace minfer
