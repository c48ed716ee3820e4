// Mutation test of the GGUF reader: a valid file with many metadata types and several tensors
// is truncated, bit-flipped, overwritten, shortened and lengthened thousands of times (seeded);
// every copy must either parse or throw minfer::Error — never crash, hang, read out of bounds
// (run under ASan+UBSan by scripts/run-gguf-fuzz.sh) or allocate far beyond its own size.
//
// Reproduce one case: MINFER_GGUF_MUTATION_ONLY=<case> test_gguf_mutation
// More cases:         MINFER_GGUF_MUTATIONS=<count> test_gguf_mutation
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <set>

#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "quant/blocks.h"
#include "quant/non_finite.h"
#include "quant/quant.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

// Allocation accounting: the largest single allocation and the total allocated while a parse
// runs, so that "never a huge allocation" is checked, not assumed.
namespace {
std::atomic<bool> g_tracking{false};
std::atomic<size_t> g_largest{0}, g_total{0};
}  // namespace

void* operator new(size_t n) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    g_total.fetch_add(n, std::memory_order_relaxed);
    size_t cur = g_largest.load(std::memory_order_relaxed);
    while (n > cur && !g_largest.compare_exchange_weak(cur, n)) {
    }
  }
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // these are the replaced pair
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace minfer {
namespace {

using VT = GGUFValueType;

// A small but varied Qwen2-like file: every value type, arrays, nested arrays, six tensors.
std::vector<uint8_t> base_file() {
  std::mt19937 rng(2024);
  GGUFWriter w;
  w.set_alignment(32);
  w.set("general.architecture", GGUFValue::str("qwen2"));
  w.set("general.name", GGUFValue::str("mutation-base"));
  w.set("general.file_type", GGUFValue::u32(7));
  w.set("qwen2.context_length", GGUFValue::u32(32768));
  w.set("qwen2.embedding_length", GGUFValue::u64(896));
  w.set("qwen2.block_count", GGUFValue::i32(24));
  w.set("qwen2.rope.freq_base", GGUFValue::f32(1e6f));
  w.set("qwen2.attention.layer_norm_rms_epsilon", GGUFValue::f64(1e-6));
  w.set("x.u8", GGUFValue::u8(200));
  w.set("x.i8", GGUFValue::i8(-100));
  w.set("x.u16", GGUFValue::u16(60000));
  w.set("x.i16", GGUFValue::i16(-30000));
  w.set("x.i64", GGUFValue::i64(-(int64_t{1} << 50)));
  w.set("tokenizer.ggml.add_bos_token", GGUFValue::boolean(false));
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int k = 0; k < 48; ++k) {
    tokens.push_back("tok" + std::to_string(k * 37 % 101) + (k % 5 ? "" : " Ġx"));
    types.push_back(k % 6 + 1);
  }
  w.set("tokenizer.ggml.tokens", GGUFValue::str_array(tokens));
  w.set("tokenizer.ggml.token_type", GGUFValue::i32_array(types));
  w.set("tokenizer.ggml.merges", GGUFValue::str_array({"Ġ t", "h e", "Ġt he", "i n"}));
  w.set("x.floats", GGUFValue::f32_array({0.5f, -2.f, 1e-3f, 7.f}));
  w.set("x.nested",
        GGUFValue::array(VT::ARRAY, {GGUFValue::array(VT::UINT16, {GGUFValue::u16(1)}),
                                     GGUFValue::str_array({"a", "bc"}),
                                     GGUFValue::array(VT::ARRAY, {GGUFValue::i32_array({9})})}));
  auto add = [&](const char* name, std::vector<int64_t> ne, WeightType t) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<uint8_t> data(n / info(t).block_elems * info(t).block_bytes);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    w.add_tensor(name, ne, t, data);
  };
  add("token_embd.weight", {32, 3}, WeightType::Q8_0);
  add("blk.0.attn_norm.weight", {8}, WeightType::F32);
  add("blk.0.attn_q.weight", {8, 2}, WeightType::F16);
  add("blk.0.ffn_down.weight", {256}, WeightType::Q4_K);
  add("blk.0.ffn_up.weight", {256}, WeightType::Q6_K);
  add("output_norm.weight", {4, 2}, WeightType::BF16);
  return w.to_bytes();
}

// Values a parser finds interesting at a count/length/offset/type position.
const uint64_t kInteresting[] = {0,          1,          2,          3,         4,
                                 7,          8,          9,          12,        13,
                                 31,         32,         33,         255,       256,
                                 65535,      0x7fffffff, 0x80000000, 0xffffffff, 1ull << 32,
                                 1ull << 40, 1ull << 62, 1ull << 63, ~0ull,     ~0ull - 31};

struct Mutator {
  std::mt19937_64 rng;
  size_t header_end;  // mutations favour the header: the data section carries no structure
  std::string description;

  size_t pick_pos(size_t size) {
    if (size == 0) return 0;
    size_t limit = (rng() % 10 < 8) ? std::min(size, header_end) : size;
    return rng() % limit;
  }
  void note(const std::string& s) { description += (description.empty() ? "" : ", ") + s; }

  void mutate_once(std::vector<uint8_t>& b) {
    switch (rng() % 7) {
      case 0: {  // truncate
        size_t n = b.empty() ? 0 : pick_pos(b.size());
        b.resize(n);
        note("truncate to " + std::to_string(n));
        break;
      }
      case 1: {  // flip bits
        int n = static_cast<int>(rng() % 4) + 1;
        for (int k = 0; k < n && !b.empty(); ++k) {
          size_t p = pick_pos(b.size());
          b[p] ^= static_cast<uint8_t>(1u << (rng() % 8));
          note("flip bit at " + std::to_string(p));
        }
        break;
      }
      case 2: {  // overwrite random bytes
        int n = static_cast<int>(rng() % 8) + 1;
        size_t p = pick_pos(b.size());
        for (int k = 0; k < n && p + k < b.size(); ++k) b[p + k] = static_cast<uint8_t>(rng());
        note("overwrite " + std::to_string(n) + " bytes at " + std::to_string(p));
        break;
      }
      case 3: {  // an interesting 4- or 8-byte value
        uint64_t v = kInteresting[rng() % std::size(kInteresting)];
        size_t width = rng() % 2 ? 8 : 4;
        size_t p = pick_pos(b.size());
        for (size_t k = 0; k < width && p + k < b.size(); ++k)
          b[p + k] = static_cast<uint8_t>(v >> (8 * k));
        note("write " + std::to_string(v) + " (" + std::to_string(width) + " bytes) at " +
             std::to_string(p));
        break;
      }
      case 4: {  // erase a range (shifts everything after it)
        size_t p = pick_pos(b.size());
        size_t n = std::min<size_t>(rng() % 16 + 1, b.size() - p);
        b.erase(b.begin() + p, b.begin() + p + n);
        note("erase " + std::to_string(n) + " at " + std::to_string(p));
        break;
      }
      case 5: {  // insert random bytes
        size_t p = pick_pos(b.size());
        size_t n = rng() % 16 + 1;
        std::vector<uint8_t> ins(n);
        for (auto& x : ins) x = static_cast<uint8_t>(rng());
        b.insert(b.begin() + p, ins.begin(), ins.end());
        note("insert " + std::to_string(n) + " at " + std::to_string(p));
        break;
      }
      case 6: {  // copy a chunk of the file over another place (plausible-looking structure)
        if (b.size() < 2) break;
        size_t from = pick_pos(b.size()), to = pick_pos(b.size());
        size_t n = std::min<size_t>({rng() % 24 + 1, b.size() - from, b.size() - to});
        std::memmove(&b[to], &b[from], n);
        note("copy " + std::to_string(n) + " from " + std::to_string(from) + " to " +
             std::to_string(to));
        break;
      }
    }
  }
};

// `bytes` in an exact-size heap buffer (one byte past the end is outside the allocation), with
// the allocation accounting reset and started for the parse that follows.
std::unique_ptr<uint8_t[]> exact_copy_and_track(const std::vector<uint8_t>& bytes) {
  std::unique_ptr<uint8_t[]> buf(new uint8_t[bytes.size() ? bytes.size() : 1]);
  std::memcpy(buf.get(), bytes.data(), bytes.size());
  g_largest = 0;
  g_total = 0;
  g_tracking = true;
  return buf;
}

// Reads everything a successful parse exposes, so that bad pointers show up under ASan.
uint64_t touch_everything(const GGUFFile& f, const uint8_t* buf, size_t size) {
  uint64_t sum = 0;
  for (const auto& [key, v] : f.metadata()) {
    sum += key.size() + v.to_string().size();
    if (v.type == VT::ARRAY) v.for_each([&](const GGUFValue& e) { sum += e.to_string().size(); });
  }
  for (const char* key : {"general.architecture", "qwen2.block_count", "tokenizer.ggml.tokens",
                          "tokenizer.ggml.token_type", "x.floats", "general.alignment"}) {
    try {
      if (f.find(key) && f.find(key)->type == VT::ARRAY) {
        sum += f.get_string_array(key).size();
      } else {
        sum += static_cast<uint64_t>(f.get_int(key));
      }
    } catch (const Error&) {
      // A mutated type is a legitimate Error from a getter.
    }
  }
  for (const auto& t : f.tensors()) {
    EXPECT_GE(t.data, buf);
    EXPECT_LE(t.data + t.nbytes, buf + size) << t.name;
    EXPECT_EQ(t.nbytes, row_bytes(t.type, t.ne[0]) * static_cast<size_t>(t.n_rows()));
    for (size_t k = 0; k < t.nbytes; ++k) sum += t.data[k];
  }
  return sum;
}

// "tensor 'blk.0.x' (tensor info 3): dimension 1 is 0" -> "tensor '' (tensor info #): ..."
std::string message_kind(const std::string& msg) {
  std::string out;
  bool quoted = false;
  for (char ch : msg) {
    if (ch == '\'') quoted = !quoted, out += ch;
    else if (quoted) continue;
    else if (ch >= '0' && ch <= '9') {
      if (out.empty() || out.back() != '#') out += '#';
    } else out += ch;
  }
  return out;
}

thread_local std::string g_current_case;
#if defined(__SANITIZE_ADDRESS__)
void on_sanitizer_death() { std::fprintf(stderr, "\ncrashing case: %s\n", g_current_case.c_str()); }
#endif

size_t env_size(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<size_t>(std::strtoull(v, nullptr, 10)) : fallback;
}

TEST(GGUFMutation, ThousandsOfCorruptCopiesParseOrThrowError) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_set_death_callback(on_sanitizer_death);
#endif
  const std::vector<uint8_t> base = base_file();
  auto good = GGUFFile::from_memory(base.data(), base.size(), "base.gguf");
  ASSERT_EQ(good->tensors().size(), 6u);
  const size_t header_end = good->data_offset();

  const size_t n_cases = env_size("MINFER_GGUF_MUTATIONS", 20000);
  const size_t only = env_size("MINFER_GGUF_MUTATION_ONLY", SIZE_MAX);
  ASSERT_GE(n_cases, 3000u);
  size_t parsed = 0, rejected = 0;
  std::set<std::string> kinds;
  size_t most_allocated = 0, most_allocated_case = 0, most_allocated_input = 0;
  for (size_t c = 0; c < n_cases; ++c) {
    if (only != SIZE_MAX && c != only) continue;
    Mutator m{std::mt19937_64(0x9e3779b97f4a7c15ULL ^ c), header_end, ""};
    std::vector<uint8_t> bytes = base;
    int n_mut = static_cast<int>(m.rng() % 3) + 1;
    for (int k = 0; k < n_mut; ++k) m.mutate_once(bytes);
    g_current_case = "case " + std::to_string(c) + ": " + m.description;

    const std::unique_ptr<uint8_t[]> buf = exact_copy_and_track(bytes);
    try {
      auto f = GGUFFile::from_memory(buf.get(), bytes.size(), "m.gguf");
      g_tracking = false;
      touch_everything(*f, buf.get(), bytes.size());
      ++parsed;
    } catch (const Error& e) {
      g_tracking = false;
      ++rejected;
      std::string msg = e.what();
      EXPECT_EQ(msg.rfind("m.gguf: ", 0), 0u) << g_current_case << "\n" << msg;
      kinds.insert(message_kind(msg));
      if (only != SIZE_MAX) std::printf("%s\n  -> %s\n", g_current_case.c_str(), msg.c_str());
    } catch (const std::exception& e) {
      g_tracking = false;
      ADD_FAILURE() << g_current_case << ": threw a non-minfer exception: " << e.what();
    }
    // Parsed values cost a bounded multiple of the bytes they came from (GGUFValue per
    // 1-byte array element is the worst case), never an allocation driven by a bad count.
    const size_t budget = 128 * bytes.size() + (64 << 10);
    EXPECT_LE(g_total.load(), budget) << g_current_case;
    EXPECT_LE(g_largest.load(), budget) << g_current_case;
    if (g_total.load() > most_allocated)
      most_allocated = g_total.load(), most_allocated_case = c, most_allocated_input = bytes.size();
    if (HasFailure()) break;  // one clear failure beats thousands of copies of it
  }
  std::printf("mutations: %zu cases, %zu parsed, %zu rejected, %zu distinct error kinds; "
              "most allocated by one parse: %zu bytes for a %zu-byte input (case %zu)\n",
              parsed + rejected, parsed, rejected, kinds.size(), most_allocated,
              most_allocated_input, most_allocated_case);
  if (only == SIZE_MAX) {
    EXPECT_GT(parsed, 0u) << "no mutated copy parsed: the mutations are too coarse";
    EXPECT_GT(rejected, n_cases / 2) << "most mutations of the header should be rejected";
    // The mutations must reach deep into the format, not only break the magic.
    EXPECT_GE(kinds.size(), 20u);
    for (const auto& k : kinds) std::printf("  %s\n", k.c_str());
  }
}

// Issue 31, item 6: files whose metadata holds huge arrays (a 16 MiB UINT8 array loaded at
// 1.8 GB, 2 million empty strings at 454 MB before arrays became views of the file). Crafted,
// not mutated: 1-3 arrays of any element type (strings empty or not, arrays of INT32 arrays),
// up to 2^22 elements and 8 MiB each; half of them then mutated once or twice. Each must parse
// or throw minfer::Error; a whole one's parse allocates at most 1 MiB whatever its arrays hold.
std::vector<uint8_t> crafted_big_arrays(std::mt19937_64& rng, std::string& what) {
  static const size_t kElemBytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};  // by type id; 0: STRING, ARRAY
  static const uint64_t kCounts[] = {0, 1, 1 << 10, 1 << 16, 1 << 20, 1 << 22};
  constexpr uint64_t kMaxBytes = 8 << 20;
  std::vector<uint8_t> b;
  auto put = [&](auto v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
  };
  const int n_keys = 1 + static_cast<int>(rng() % 3);
  put(uint32_t{0x46554747});
  put(uint32_t{3});
  put(uint64_t{0});  // tensors
  put(uint64_t{static_cast<uint64_t>(n_keys)});
  for (int k = 0; k < n_keys; ++k) {
    const std::string key = "x.big" + std::to_string(k);
    put(uint64_t{key.size()});
    b.insert(b.end(), key.begin(), key.end());
    put(uint32_t{9});  // ARRAY
    const uint32_t type = static_cast<uint32_t>(rng() % 13);
    put(type);
    uint64_t count = kCounts[rng() % std::size(kCounts)];
    if (type == 8) {  // STRING: each 8 bytes of length, then 0-3 bytes
      count = std::min<uint64_t>(count, kMaxBytes / 11);
      put(count);
      for (uint64_t e = 0; e < count; ++e) {
        const uint64_t len = rng() % 4;
        put(len);
        for (uint64_t c = 0; c < len; ++c) b.push_back(static_cast<uint8_t>('a' + c));
      }
    } else if (type == 9) {  // ARRAY of INT32 arrays of 0-4 elements
      count = std::min<uint64_t>(count, kMaxBytes / 28);
      put(count);
      for (uint64_t e = 0; e < count; ++e) {
        const uint64_t n = rng() % 5;
        put(uint32_t{5});
        put(n);
        for (uint64_t c = 0; c < n; ++c) put(static_cast<int32_t>(e + c));
      }
    } else {
      count = std::min<uint64_t>(count, kMaxBytes / kElemBytes[type]);
      put(count);
      const size_t at = b.size();
      b.resize(at + count * kElemBytes[type]);
      if (type == 7)  // BOOL: 0 or 1
        for (size_t i = at; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i & 1);
      else
        for (size_t i = at; i < b.size(); i += 64) b[i] = static_cast<uint8_t>(rng());
    }
    what += (k ? ", " : "") + std::to_string(count) + " x " + gguf_value_type_name(static_cast<VT>(type));
  }
  b.resize((b.size() + 31) / 32 * 32, 0);
  return b;
}

TEST(GGUFMutation, CraftedHugeArraysParseIntoViewsOrThrowError) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_set_death_callback(on_sanitizer_death);
#endif
  const size_t n_cases = env_size("MINFER_GGUF_CRAFTED", 300);
  size_t parsed = 0, rejected = 0, mutated = 0, most_allocated = 0;
  uint64_t elements = 0;
  for (size_t c = 0; c < n_cases && !HasFailure(); ++c) {
    std::mt19937_64 rng(0x5eed0000ULL + c);
    std::string what;
    std::vector<uint8_t> bytes = crafted_big_arrays(rng, what);
    const bool damaged = rng() % 2 == 0;
    if (damaged) {  // then damaged: counts, types and lengths sit everywhere in such a file
      Mutator m{std::mt19937_64(rng()), rng() % 2 ? bytes.size() : std::min<size_t>(bytes.size(), 96), ""};
      for (int k = 1 + static_cast<int>(rng() % 2); k > 0; --k) m.mutate_once(bytes);
      what += "; then " + m.description;
      ++mutated;
    }
    g_current_case = "crafted case " + std::to_string(c) + ": " + what;
    const std::unique_ptr<uint8_t[]> buf = exact_copy_and_track(bytes);
    try {
      auto f = GGUFFile::from_memory(buf.get(), bytes.size(), "big.gguf");
      g_tracking = false;
      ++parsed;
      for (const auto& [key, v] : f->metadata()) {
        (void)v.to_string();
        elements += v.type == VT::ARRAY ? v.size() : 1;
        if (v.type == VT::ARRAY && v.size() <= (1u << 16)) v.for_each([](const GGUFValue& e) { (void)e.to_string(); });
      }
    } catch (const Error& e) {
      g_tracking = false;
      ++rejected;
      EXPECT_EQ(std::string(e.what()).rfind("big.gguf: ", 0), 0u) << g_current_case << "\n" << e.what();
    } catch (const std::exception& e) {
      g_tracking = false;
      ADD_FAILURE() << g_current_case << ": threw a non-minfer exception: " << e.what();
    }
    // Whole, the arrays are views: 1 MiB covers the keys. Damaged, a count may be anything the
    // file's size allows (the rule of the mutation test above).
    const size_t budget = damaged ? 128 * bytes.size() + (64 << 10) : size_t{1} << 20;
    EXPECT_LE(g_total.load(), budget) << g_current_case << ": a parse allocated " << g_total.load() << " bytes";
    if (!damaged) most_allocated = std::max(most_allocated, g_total.load());
  }
  std::printf("crafted huge arrays: %zu files (%zu then mutated), %zu parsed (%llu metadata elements), %zu rejected; "
              "most allocated by one parse of a whole one: %zu bytes\n",
              parsed + rejected, mutated, parsed, static_cast<unsigned long long>(elements), rejected, most_allocated);
  EXPECT_GT(parsed, 0u);
}

// Issue 31, item 9: weights holding a NaN or Inf where one can be: a quantized block's f16 scale
// or offset (d, m, dmin), a float tensor's value. Crafted: 1-4 tensors of random weight types and
// shapes with finite contents, 0-2 non-finite words planted in each (NaNs with random payloads
// and signs, +Inf, -Inf), then half of the files mutated once or twice. Each must parse or throw
// minfer::Error; find_non_finite then reads every weight tensor of a parsed one, on the calling
// thread or a pool, inside the file (ASan) and, for a whole file, names each tensor's first
// planted block or element and nothing in the others.
struct PlantedFile {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> first_planted;  // per tensor, -1: none
};

PlantedFile crafted_non_finite(std::mt19937_64& rng, std::string& what) {
  struct Layout {
    WeightType t;
    std::vector<size_t> fields;  // byte offsets of the f16 fields in a block; empty: a float type
  };
  static const Layout kTypes[] = {
      {WeightType::F32, {}},
      {WeightType::F16, {}},
      {WeightType::BF16, {}},
      {WeightType::Q4_0, {offsetof(BlockQ4_0, d)}},
      {WeightType::Q4_1, {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)}},
      {WeightType::Q5_0, {offsetof(BlockQ5_0, d)}},
      {WeightType::Q5_1, {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)}},
      {WeightType::Q8_0, {offsetof(BlockQ8_0, d)}},
      {WeightType::Q4_K, {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)}},
      {WeightType::Q5_K, {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)}},
      {WeightType::Q6_K, {offsetof(BlockQ6_K, d)}},
  };
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  PlantedFile out;
  GGUFWriter w;
  w.set_alignment(32);
  w.set("general.architecture", GGUFValue::str("qwen2"));
  const int n_tensors = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < n_tensors; ++k) {
    const Layout& l = kTypes[rng() % std::size(kTypes)];
    const WeightTypeInfo& ti = info(l.t);
    const int64_t cols = ti.block_elems * (1 + static_cast<int64_t>(rng() % (ti.block_elems == 1 ? 64 : 4)));
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 4), n = rows * cols;
    std::vector<float> v(static_cast<size_t>(n));
    // Some values near f16's largest (65504), none past it: every scale made is finite.
    for (auto& x : v) x = unit(rng) * (rng() % 8 == 0 ? 60000.f : 1.f);
    std::vector<uint8_t> data(row_bytes(l.t, n));
    quantize_row(l.t, v.data(), data.data(), n);
    const int64_t units = n / ti.block_elems;
    int64_t first = -1;
    const int planted = static_cast<int>(rng() % 3);
    for (int p = 0; p < planted; ++p) {
      const int64_t unit = static_cast<int64_t>(rng() % static_cast<uint64_t>(units));
      uint8_t* at = data.data() + static_cast<size_t>(unit) * ti.block_bytes;
      const uint64_t kind = rng() % 3;  // NaN (random payload and sign), +Inf, -Inf
      const uint64_t sign = kind == 2 || (kind == 0 && rng() % 2) ? 1 : 0;
      if (l.t == WeightType::F32) {
        const uint32_t bits = static_cast<uint32_t>(sign << 31) | 0x7f800000u |
                              (kind == 0 ? 1 + static_cast<uint32_t>(rng() % 0x7fffff) : 0);
        std::memcpy(at, &bits, 4);
      } else {
        // f16: exponent 0x7c00, mantissa 10 bits; bf16: exponent 0x7f80, mantissa 7 bits.
        const bool bf16 = l.t == WeightType::BF16;
        const uint16_t mant = kind == 0 ? static_cast<uint16_t>(1 + rng() % (bf16 ? 0x7f : 0x3ff)) : 0;
        const uint16_t bits = static_cast<uint16_t>((sign << 15) | (bf16 ? 0x7f80 : 0x7c00) | mant);
        std::memcpy(at + (l.fields.empty() ? 0 : l.fields[rng() % l.fields.size()]), &bits, 2);
      }
      first = first < 0 ? unit : std::min(first, unit);
    }
    const std::string name = "blk." + std::to_string(k) + ".w";
    w.add_tensor(name, {cols, rows}, l.t, data);
    out.first_planted.push_back(first);
    what += (k ? ", " : "") + std::string(ti.name) + " {" + std::to_string(cols) + ", " + std::to_string(rows) +
            "} " + std::to_string(planted) + " planted" + (first >= 0 ? " (first " + std::to_string(first) + ")" : "");
  }
  out.bytes = w.to_bytes();
  return out;
}

TEST(GGUFMutation, CraftedNonFiniteScalesAreFoundInsideTheFile) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_set_death_callback(on_sanitizer_death);
#endif
  const size_t n_cases = env_size("MINFER_GGUF_NONFINITE", 300);
  ThreadPool pool(3);
  size_t parsed = 0, rejected = 0, mutated = 0, tensors_scanned = 0, found = 0, checked_whole = 0;
  for (size_t c = 0; c < n_cases && !HasFailure(); ++c) {
    std::mt19937_64 rng(0x0f1a7e00ULL + c);
    std::string what;
    PlantedFile pf = crafted_non_finite(rng, what);
    const bool damaged = rng() % 2 == 0;
    if (damaged) {
      Mutator m{std::mt19937_64(rng()), pf.bytes.size(), ""};
      for (int k = 1 + static_cast<int>(rng() % 2); k > 0; --k) m.mutate_once(pf.bytes);
      what += "; then " + m.description;
      ++mutated;
    }
    g_current_case = "non-finite case " + std::to_string(c) + ": " + what;
    const std::unique_ptr<uint8_t[]> buf = exact_copy_and_track(pf.bytes);
    std::unique_ptr<GGUFFile> f;
    try {
      f = GGUFFile::from_memory(buf.get(), pf.bytes.size(), "scan.gguf");
      g_tracking = false;
      ++parsed;
    } catch (const Error& e) {
      g_tracking = false;
      ++rejected;
      ASSERT_TRUE(damaged) << g_current_case << ": the whole file was refused: " << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("scan.gguf: ", 0), 0u) << g_current_case << "\n" << e.what();
      continue;
    }
    for (size_t k = 0; k < f->tensors().size(); ++k) {
      const GGUFTensorInfo& t = f->tensors()[k];
      if (info(t.type).activation_only) continue;  // Model::load refuses those by their type
      const auto bad = find_non_finite(t.type, t.data, t.n_elements(), k % 2 ? &pool : nullptr);
      ++tensors_scanned;
      found += bad ? 1 : 0;
      if (!damaged) {
        ASSERT_EQ(f->tensors().size(), pf.first_planted.size());
        EXPECT_EQ(bad ? bad->index : -1, pf.first_planted[k]) << g_current_case << ": tensor " << t.name;
        ++checked_whole;
      }
    }
  }
  std::printf("crafted non-finite weights: %zu files (%zu then mutated), %zu parsed, %zu rejected; %zu tensors "
              "scanned (%zu whole ones checked against their planted values), %zu with a non-finite value\n",
              parsed + rejected, mutated, parsed, rejected, tensors_scanned, checked_whole, found);
  EXPECT_GT(checked_whole, 0u);
  EXPECT_GT(found, 0u);
}

}  // namespace
}  // namespace minfer
