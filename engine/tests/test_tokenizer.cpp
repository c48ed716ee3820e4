// Unit tests of the tokenizer's parts: UTF-8, character classes, NFC, the Qwen2 split, the
// byte-level alphabet, BPE merge order, special tokens, GGUF/HF import, and error messages.
// Parity with the reference implementation on a large corpus is test_tokenizer_parity.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

using namespace minfer;
namespace fs = std::filesystem;

namespace {

std::string u8(std::u32string_view s) { return unicode::encode_utf8(s); }
std::u32string u32(std::string_view s) { return unicode::decode_utf8(s); }

std::vector<std::string> split(const std::string& text) {
  std::u32string cps = u32(text);
  std::vector<std::string> out;
  for (const TextSpan& s : pretokenize(PreTokenizer::Qwen2, cps)) out.push_back(u8(std::u32string_view(cps).substr(s.begin, s.end - s.begin)));
  return out;
}

// A byte-level vocabulary: the 256 byte tokens, then merged tokens, then extra literal tokens.
struct VocabBuilder {
  TokenizerVocab v;
  VocabBuilder() {
    for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_level::encode(std::string(1, static_cast<char>(b))));
    v.types.assign(256, 1);
  }
  int32_t merge(const std::string& a, const std::string& b) {
    v.merges.push_back(byte_level::encode(a) + " " + byte_level::encode(b));
    return add(byte_level::encode(a + b), TokenType::Normal);
  }
  int32_t add(const std::string& spelling, TokenType t) {
    v.tokens.push_back(spelling);
    v.types.push_back(static_cast<int32_t>(t));
    return static_cast<int32_t>(v.tokens.size() - 1);
  }
  int32_t byte(char c) const { return static_cast<uint8_t>(c); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Utf8, ValidCodePointsRoundTrip) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> dist(1, 0x10FFFF);
  std::u32string cps;
  while (cps.size() < 5000) {
    char32_t c = dist(rng);
    if (c < 0xD800 || c > 0xDFFF) cps.push_back(c);
  }
  EXPECT_EQ(u32(u8(cps)), cps);
  EXPECT_EQ(u8(U"a\u00e9\u4e2d\U0001F600"), "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
}

TEST(Utf8, InvalidBytesBecomeRawMarkersAndRoundTrip) {
  // lone continuation, overlong NUL, surrogate, past U+10FFFF, truncated 3-byte sequence
  std::string bad = "a\x80" "b\xC0\x80" "c\xED\xA0\x80" "d\xF4\x90\x80\x80" "e\xE4\xB8";
  std::u32string cps = u32(bad);
  EXPECT_EQ(cps[1], unicode::kRawByteBase + 0x80);
  EXPECT_EQ(cps[3], unicode::kRawByteBase + 0xC0);
  EXPECT_EQ(u8(cps), bad);
  std::mt19937 rng(11);
  for (int t = 0; t < 200; ++t) {
    std::string s(1 + rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(u8(u32(s)), s);
  }
}

TEST(CharClasses, LettersNumbersSpaces) {
  for (char32_t c : {U'a', U'Z', U'\u00e9', U'\u4e2d', U'\u3042', U'\uac00', U'\u0627', U'\u0915', U'\u00aa'})
    EXPECT_TRUE(unicode::is_letter(c)) << std::hex << static_cast<uint32_t>(c);
  for (char32_t c : {U'1', U'\u0663', U'\u00bd', U'\u2163', U'\u0967'}) EXPECT_TRUE(unicode::is_number(c)) << std::hex << static_cast<uint32_t>(c);
  for (char32_t c : {U'-', U'\u0301', U'\u093f', U'\U0001F600', U' '}) EXPECT_FALSE(unicode::is_letter(c)) << std::hex << static_cast<uint32_t>(c);
  // ECMAScript \s: includes U+FEFF and U+3000, not U+0085 (unlike the White_Space property).
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', U'\v', U'\f', U'\u00a0', U'\u3000', U'\u2028', U'\ufeff'})
    EXPECT_TRUE(unicode::is_space(c)) << std::hex << static_cast<uint32_t>(c);
  for (char32_t c : {U'\u0085', U'\u200b', U'x', U'\u180e'}) EXPECT_FALSE(unicode::is_space(c)) << std::hex << static_cast<uint32_t>(c);
  EXPECT_FALSE(unicode::is_letter(unicode::kRawByteBase + 0x41));
}

TEST(Nfc, KnownAnswers) {
  EXPECT_EQ(unicode::nfc(U"e\u0301"), U"\u00e9");
  EXPECT_EQ(unicode::nfc(U"\u1100\u1161\u11a8"), U"\uac01");        // Hangul L V T
  EXPECT_EQ(unicode::nfc(U"a\u0302\u0323"), U"\u1ead");             // reordered, then composed
  EXPECT_EQ(unicode::nfc(U"a\u0323\u0302"), U"\u1ead");
  EXPECT_EQ(unicode::nfc(U"\u212b"), U"\u00c5");                    // singleton (Angstrom sign)
  EXPECT_EQ(unicode::nfc(U"\u2126"), U"\u03a9");                    // singleton (Ohm sign)
  EXPECT_EQ(unicode::nfc(U"\u0958"), U"\u0915\u093c");              // composition exclusion
  EXPECT_EQ(unicode::nfc(U"a\u0301\u0301"), U"\u00e1\u0301");       // second acute is blocked
  EXPECT_EQ(unicode::nfc(U"\u0344"), U"\u0308\u0301");              // non-starter decomposition
  EXPECT_EQ(unicode::nfc(U"u\u0308\u0304"), U"\u01d6");             // two-step composition
  EXPECT_EQ(unicode::nfc(U"\u0b47\u0b3e"), U"\u0b4b");              // starter + starter
  EXPECT_EQ(unicode::nfc(U"\u00e9\u4e2d\U0001F600"), U"\u00e9\u4e2d\U0001F600");
}

TEST(Nfc, IdempotentAndStableOnRandomText) {
  std::mt19937 rng(3);
  const std::u32string pool = U"ae\u0301\u0302\u0323\u0308\u0304\u00e9\u1100\u1161\u11a8\uac00\u0915\u093c\u212b\u0344\u0b47\u0b3e \u05b4\u05bc";
  for (int t = 0; t < 2000; ++t) {
    std::u32string s;
    for (int k = 0, n = 1 + rng() % 8; k < n; ++k) s.push_back(pool[rng() % pool.size()]);
    std::u32string once = unicode::nfc(s);
    EXPECT_EQ(unicode::nfc(once), once);
  }
}

TEST(Pretokenize, KnownSplits) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("I'M here's they'LL 'sup"), (V{"I", "'M", " here", "'s", " they", "'LL", " '", "sup"}));
  EXPECT_EQ(split("abc   def"), (V{"abc", "  ", " def"}));
  EXPECT_EQ(split("a\r\n\r\nb"), (V{"a", "\r\n\r\n", "b"}));
  EXPECT_EQ(split("x  \n  y"), (V{"x", "  \n", " ", " y"}));
  EXPECT_EQ(split("12345"), (V{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(split("foo!!!\n\nbar"), (V{"foo", "!!!\n\n", "bar"}));
  EXPECT_EQ(split(" ...x"), (V{" ...", "x"}));
  EXPECT_EQ(split("end   "), (V{"end", "   "}));
  EXPECT_EQ(split("\t\tx"), (V{"\t", "\tx"}));
  EXPECT_EQ(split("你好，世界"), (V{"你好", "，世界"}));
  EXPECT_EQ(split("a\u00a0\u00a0b"), (V{"a", "\u00a0", "\u00a0b"}));
  EXPECT_EQ(split("x\ufeff\ufeffy"), (V{"x", "\ufeff", "\ufeffy"}));
  EXPECT_EQ(split("x\u0085y"), (V{"x", "\u0085y"}));
  EXPECT_EQ(split("  'Ll"), (V{" ", " '", "Ll"}));
  EXPECT_EQ(split("😀👍🏽 x"), (V{"😀👍🏽", " x"}));
  EXPECT_EQ(split(" \n"), (V{" \n"}));
}

// llama-bpe: digits in groups of up to three; the rest as Qwen2.
TEST(Pretokenize, LlamaBpeGroupsDigitsByThree) {
  auto split_llama = [](const std::string& text) {
    std::u32string cps = u32(text);
    std::vector<std::string> out;
    for (const TextSpan& s : pretokenize(PreTokenizer::LlamaBpe, cps))
      out.push_back(u8(std::u32string_view(cps).substr(s.begin, s.end - s.begin)));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(split_llama("12345 apples"), (V{"123", "45", " apples"}));
  EXPECT_EQ(split("12345"), (V{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(split_llama("I'LL pay 1000000"), (V{"I", "'LL", " pay", " ", "100", "000", "0"}));
  EXPECT_EQ(split_llama("\u0663\u0664\u0665\u0666"), (V{"\u0663\u0664\u0665", "\u0666"}));  // any \p{N}
}

TEST(Pretokenize, SpansCoverRandomText) {
  std::mt19937 rng(5);
  const std::u32string pool = U"ab Z1 9'\r\n\t.,!\u00a0\u4e2d\u0301\U0001F600\u3000";
  for (int t = 0; t < 2000; ++t) {
    std::u32string s;
    for (int k = 0, n = rng() % 30; k < n; ++k) s.push_back(pool[rng() % pool.size()]);
    size_t at = 0;
    for (const TextSpan& span : pretokenize(PreTokenizer::Qwen2, s)) {
      ASSERT_EQ(span.begin, at);
      ASSERT_GT(span.end, span.begin);
      at = span.end;
    }
    EXPECT_EQ(at, s.size());
  }
}

TEST(ByteLevel, AlphabetIsABijection) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    char32_t c = byte_level::byte_to_char(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(c).second);
    EXPECT_EQ(byte_level::char_to_byte(c), b);
  }
  EXPECT_EQ(byte_level::byte_to_char(' '), U'\u0120');   // "Ġ"
  EXPECT_EQ(byte_level::byte_to_char('\n'), U'\u010a');  // "Ċ"
  EXPECT_EQ(byte_level::byte_to_char('A'), U'A');
  std::mt19937 rng(9);
  std::string bytes(3000, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  bool ok = false;
  EXPECT_EQ(byte_level::decode(byte_level::encode(bytes), &ok), bytes);
  EXPECT_TRUE(ok);
}

TEST(Bpe, LowestRankFirstAndLeftmostOnTies) {
  VocabBuilder a;
  int32_t bc = a.merge("b", "c");
  a.merge("a", "b");
  a.merge("ab", "c");
  auto t1 = make_bpe_tokenizer(a.v);
  EXPECT_EQ(t1->encode("abc"), (std::vector<int32_t>{a.byte('a'), bc}));

  VocabBuilder b;
  b.merge("a", "b");
  b.merge("b", "c");
  int32_t abc = b.merge("ab", "c");
  int32_t aa = b.merge("a", "a");
  auto t2 = make_bpe_tokenizer(b.v);
  EXPECT_EQ(t2->encode("abc"), (std::vector<int32_t>{abc}));
  EXPECT_EQ(t2->encode("aaa"), (std::vector<int32_t>{aa, b.byte('a')}));
  EXPECT_EQ(t2->encode("aaaa"), (std::vector<int32_t>{aa, aa}));
  // Pieces are merged separately: " abc" is one piece, and no merge joins the space.
  EXPECT_EQ(t2->encode("abc abc"), (std::vector<int32_t>{abc, b.byte(' '), abc}));
}

TEST(Bpe, SpecialTokensMatchLongestFirstAndSkipNormalization) {
  VocabBuilder b;
  int32_t start = b.add("<|im_start|>", TokenType::Control);
  int32_t im = b.add("<|im", TokenType::UserDefined);
  int32_t think = b.add("<think>", TokenType::UserDefined);
  b.add("[PAD300]", TokenType::Unused);
  auto t = make_bpe_tokenizer(b.v);
  std::vector<int32_t> ids = t->encode("x<|im_start|><|im<think>[PAD300]e\u0301");
  std::vector<int32_t> want = {b.byte('x'), start, im, think, b.byte('[')};
  ASSERT_GE(ids.size(), want.size());
  EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + 5), want);
  // The unused token is not matched: its text goes through BPE; "e + U+0301" is NFC-composed to é.
  EXPECT_EQ(t->decode(ids), "x<|im_start|><|im<think>[PAD300]\u00e9");
  EXPECT_EQ(t->token_bytes(start), "<|im_start|>");
}

TEST(Bpe, RandomTextRoundTripsToItsNfc) {
  VocabBuilder b;
  b.merge(" ", "t");
  b.merge(" t", "h");
  b.merge("\xE4", "\xB8");
  auto t = make_bpe_tokenizer(b.v);
  std::mt19937 rng(13);
  const std::u32string pool = U"ab Z1 9'\r\n\t.,!\u00a0\u4e2d\u4e0a\u0301e\U0001F600\u3000\uac00\u1100\u1161";
  for (int k = 0; k < 1000; ++k) {
    std::u32string s;
    for (int i = 0, n = rng() % 40; i < n; ++i) s.push_back(pool[rng() % pool.size()]);
    std::string text = u8(s);
    if (k % 5 == 0) text.push_back(static_cast<char>(0x80 + rng() % 64));  // invalid UTF-8 too
    EXPECT_EQ(t->decode(t->encode(text)), u8(unicode::nfc(u32(text))));
  }
}

TEST(Bpe, BadVocabulariesAreRejectedWithClearMessages) {
  VocabBuilder b;
  b.merge("a", "b");
  auto with = [&](auto change) {
    TokenizerVocab v = b.v;
    v.source = "m.gguf";
    change(v);
    return error_of([&] { make_bpe_tokenizer(v); });
  };
  EXPECT_NE(with([](TokenizerVocab& v) { v.types.pop_back(); }).find("token_type has 256 entries"), std::string::npos);
  EXPECT_NE(with([](TokenizerVocab& v) { v.types[3] = 9; }).find("token_type[3] = 9"), std::string::npos);
  EXPECT_NE(with([](TokenizerVocab& v) { v.merges.push_back("ab"); }).find("merges[1] = 'ab' is not two tokens"), std::string::npos);
  EXPECT_NE(with([](TokenizerVocab& v) { v.merges.push_back("q zz"); }).find("missing from tokenizer.ggml.tokens"), std::string::npos);
  EXPECT_NE(with([](TokenizerVocab& v) { v.tokens[65] = "xx"; }).find("no token for byte 0x41"), std::string::npos);
  EXPECT_NE(with([](TokenizerVocab& v) { v.eos_id = 5000; }).find("eos_token_id = 5000"), std::string::npos);
  EXPECT_NE(with([](TokenizerVocab& v) { v.tokens.clear(); v.types.clear(); }).find("m.gguf: tokenizer.ggml.tokens is empty"), std::string::npos);
  auto t = make_bpe_tokenizer(b.v);
  EXPECT_NE(error_of([&] { t->decode({1, 999}); }).find("token id 999 is outside"), std::string::npos);
}

namespace {

// A small tokenizer.json in the HF layout (array merges, added tokens, NFC, Qwen2 split).
fs::path write_small_hf_tokenizer(const fs::path& dir, bool with_config) {
  fs::create_directories(dir);
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
  vocab[byte_level::encode(" t")] = 256;
  vocab[byte_level::encode(" th")] = 257;
  nlohmann::json j;
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                           {"behavior", "Isolated"}},
                          {{"type", "ByteLevel"}}}}};
  j["model"] = {{"type", "BPE"}, {"vocab", vocab},
                {"merges", nlohmann::json::array({nlohmann::json::array({byte_level::encode(" "), "t"}),
                                                  nlohmann::json::array({byte_level::encode(" t"), "h"})})}};
  j["added_tokens"] = {{{"id", 258}, {"content", "<|endoftext|>"}, {"special", true}},
                       {{"id", 259}, {"content", "<|im_end|>"}, {"special", true}},
                       {{"id", 260}, {"content", "<think>"}, {"special", false}}};
  std::ofstream(dir / "tokenizer.json") << j.dump();
  if (with_config)
    std::ofstream(dir / "tokenizer_config.json")
        << nlohmann::json{{"eos_token", "<|im_end|>"}, {"bos_token", nullptr}, {"chat_template", "{{ x }}"}}.dump();
  else
    fs::remove(dir / "tokenizer_config.json");
  return dir / "tokenizer.json";
}

}  // namespace

TEST(HfImport, WritesGgufKeysThatFromGgufReads) {
  fs::path dir = fs::path(MINFER_BINARY_DIR) / "test_tokenizer_tmp";
  fs::path json_path = write_small_hf_tokenizer(dir, true);
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::str("qwen2"));
  import_hf_tokenizer(json_path.string(), 264, w);
  fs::path gguf = dir / "vocab.gguf";
  w.write(gguf.string());

  auto f = GGUFFile::open(gguf.string());
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "qwen2");
  std::vector<std::string> tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 264u);
  EXPECT_EQ(tokens[261], "[PAD261]");
  std::vector<int64_t> types = f->get_int_array("tokenizer.ggml.token_type");
  EXPECT_EQ(types[65], 1);
  EXPECT_EQ(types[258], 3);
  EXPECT_EQ(types[260], 4);
  EXPECT_EQ(types[263], 5);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.merges"), (std::vector<std::string>{"Ġ t", "Ġt h"}));
  EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id"), 258);
  EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), 259);
  EXPECT_EQ(f->get_int("tokenizer.ggml.padding_token_id"), 259);
  EXPECT_EQ(f->get_string("tokenizer.chat_template"), "{{ x }}");

  auto t = Tokenizer::from_gguf(*f);
  EXPECT_EQ(t->vocab_size(), 264);
  EXPECT_EQ(t->eos_id(), 259);
  EXPECT_TRUE(t->is_end_of_generation(258));
  EXPECT_TRUE(t->is_end_of_generation(259));
  EXPECT_FALSE(t->is_end_of_generation(260));
  EXPECT_EQ(t->encode("the<think> th<|im_end|>"),
            (std::vector<int32_t>{'t', 'h', 'e', 260, 257, 259}));
  EXPECT_EQ(t->decode({'h', 'i', 260, 256, 259, 262}), "hi<think> t<|im_end|>[PAD262]");

  // Without tokenizer_config.json, <|endoftext|> serves as BOS, EOS and padding.
  write_small_hf_tokenizer(dir, false);
  GGUFWriter w2;
  import_hf_tokenizer(json_path.string(), 261, w2);
  w2.write(gguf.string());
  auto f2 = GGUFFile::open(gguf.string());
  EXPECT_EQ(f2->get_int("tokenizer.ggml.eos_token_id"), 258);
  EXPECT_EQ(f2->get_int("tokenizer.ggml.padding_token_id"), 258);
}

TEST(HfImport, RejectsWhatItCannotRepresent) {
  fs::path dir = fs::path(MINFER_BINARY_DIR) / "test_tokenizer_tmp";
  fs::path json_path = write_small_hf_tokenizer(dir, false);
  GGUFWriter w;
  EXPECT_NE(error_of([&] { import_hf_tokenizer(json_path.string(), 100, w); }).find("outside the vocabulary size 100"),
            std::string::npos);
  EXPECT_NE(error_of([&] { import_hf_tokenizer((dir / "missing.json").string(), 300, w); }).find("missing.json: cannot open"),
            std::string::npos);
  std::ofstream(dir / "broken.json") << "{\"model\": ";
  EXPECT_NE(error_of([&] { import_hf_tokenizer((dir / "broken.json").string(), 300, w); }).find("not valid JSON"),
            std::string::npos);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json_path));
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+";
  std::ofstream(dir / "other.json") << j.dump();
  EXPECT_NE(error_of([&] { import_hf_tokenizer((dir / "other.json").string(), 300, w); }).find("neither the Qwen2 nor the Llama 3 split"),
            std::string::npos);
}

TEST(FromGguf, RejectsOtherTokenizerModels) {
  fs::path dir = fs::path(MINFER_BINARY_DIR) / "test_tokenizer_tmp";
  fs::create_directories(dir);
  fs::path gguf = dir / "llama.gguf";
  GGUFWriter w;
  w.set("tokenizer.ggml.model", GGUFValue::str("llama"));
  w.write(gguf.string());
  auto f = GGUFFile::open(gguf.string());
  std::string msg = error_of([&] { Tokenizer::from_gguf(*f); });
  EXPECT_NE(msg.find("llama.gguf: tokenizer.ggml.model is 'llama'"), std::string::npos) << msg;

  GGUFWriter w2;
  w2.set("tokenizer.ggml.model", GGUFValue::str("gpt2"));
  w2.set("tokenizer.ggml.pre", GGUFValue::str("deepseek-llm"));
  w2.write(gguf.string());
  auto f2 = GGUFFile::open(gguf.string());
  msg = error_of([&] { Tokenizer::from_gguf(*f2); });
  EXPECT_NE(msg.find("tokenizer.ggml.pre is 'deepseek-llm'; the supported pre-tokenizers are 'qwen2' or 'llama-bpe'"),
            std::string::npos)
      << msg;
}
