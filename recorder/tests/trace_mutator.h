// Damaged copies of a valid trace, for the mutation tests (recorder and server) and
// scripts/run-trace-fuzz.sh: structure-aware edits of the JSON (a field removed, a value of
// another type, extreme or out-of-range numbers, deep nesting, emptied or repeated arrays) and
// byte-level damage of the text (flipped bytes, cuts, inserted garbage), sometimes gzipped and
// then cut, flipped or followed by garbage. The same seed gives the same mutant.
#pragma once
#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gzip_compress.h"

namespace minfer::trace::testing {

// Crafted classes (issue 31): each is made alone, so a reader must refuse every one of them
// (unless the gzip around it is damaged too, or a .partial's salvage cuts the flaw away).
enum class Crafted {
  None,
  KeyTwice,  // one member written twice, another value the second time; often the top-level "steps"
  NulAfter,  // the text followed by NUL bytes, then junk or a slice of the text (a second writer's bytes)
};

struct Mutant {
  std::string bytes;  // the file's content
  bool gzip = false;  // bytes are (damaged) gzip
  bool gzip_damaged = false;
  Crafted crafted = Crafted::None;
  std::string what;   // the edits made, for failure messages
};

class TraceMutator {
 public:
  explicit TraceMutator(nlohmann::json base) : base_(std::move(base)), base_text_(base_.dump()) {}

  Mutant make(uint64_t seed) const {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
    Mutant m;
    std::string text;
    if (pick(rng, 8) == 0) {  // a crafted class, alone
      if (pick(rng, 2) == 0) {
        m.crafted = Crafted::KeyTwice;
        text = with_a_key_twice(base_, rng, m.what);
      } else {
        m.crafted = Crafted::NulAfter;
        text = base_text_;
        m.what = nul_after(text, rng);
      }
      m.what += "; ";
    } else if (pick(rng, 4) != 0) {  // mostly: structural edits, then maybe a byte-level one
      nlohmann::json doc = base_;
      const int edits = 1 + static_cast<int>(pick(rng, 3));
      for (int i = 0; i < edits; ++i) m.what += edit_json(doc, rng) + "; ";
      text = doc.dump();
      if (pick(rng, 4) == 0) m.what += edit_text(text, rng) + "; ";
    } else {
      text = base_text_;
      const int edits = 1 + static_cast<int>(pick(rng, 3));
      for (int i = 0; i < edits; ++i) m.what += edit_text(text, rng) + "; ";
    }
    if (pick(rng, 4) == 0) {
      m.gzip = true;
      text = gzip(text);
      m.what += "gzip";
      switch (pick(rng, 5)) {
        case 0: text.resize(pick(rng, text.size())); m.what += " cut"; m.gzip_damaged = true; break;
        case 1: text += "trailing garbage"; m.what += " + garbage"; m.gzip_damaged = true; break;
        case 2: text[2 + pick(rng, text.size() - 2)] ^= static_cast<char>(1 + pick(rng, 255)); m.what += " flipped"; m.gzip_damaged = true; break;
        default: break;
      }
    }
    m.bytes = std::move(text);
    return m;
  }

 private:
  static uint64_t pick(std::mt19937_64& rng, uint64_t n) { return n == 0 ? 0 : rng() % n; }

  static std::string gzip(const std::string& raw) { return minfer::trace::gzip_compress(raw, 1); }

  // A random value inside doc (a random walk that may stop at any depth), with its parent.
  struct Spot {
    nlohmann::json* value;
    nlohmann::json* parent;  // null for the root
    std::string key;         // when the parent is an object
    size_t index = 0;        // when the parent is an array
  };
  static Spot walk(nlohmann::json& doc, std::mt19937_64& rng, bool want_container = false) {
    Spot s{&doc, nullptr, {}, 0};
    for (int depth = 0; depth < 12; ++depth) {
      nlohmann::json& v = *s.value;
      if (!(v.is_object() || v.is_array()) || v.empty()) break;
      if (depth > 0 && pick(rng, 5) == 0) break;
      const size_t i = pick(rng, v.size());
      Spot next{nullptr, &v, {}, i};
      if (v.is_object()) {
        auto it = v.begin();
        std::advance(it, static_cast<long>(i));
        next.key = it.key();
        next.value = &it.value();
      } else {
        next.value = &v[i];
      }
      if (want_container && !(next.value->is_object() || next.value->is_array())) break;
      s = next;
    }
    return s;
  }

  static nlohmann::json odd_value(std::mt19937_64& rng) {
    using nlohmann::json;
    switch (pick(rng, 20)) {
      case 0: return nullptr;
      case 1: return true;
      case 2: return "x";
      case 3: return "";
      case 4: return 0;
      case 5: return -1;
      case 6: return 1.5;
      case 7: return 1e300;
      case 8: return -1e300;
      case 9: return static_cast<int64_t>(9007199254740993LL);
      case 10: return INT64_MAX;
      case 11: return UINT64_MAX;
      case 12: return INT64_MIN;
      case 13: return json::array();
      case 14: return json::object();
      case 15: return json::array({1, 2, 3});
      case 16: return json{{"a", 1}};
      case 17: {  // nested, but within the reader's depth limit
        json v = 0;
        for (int i = 0; i < 40; ++i) v = json::array({v});
        return v;
      }
      case 18: return json(std::vector<int>(2000, 7));
      default: return 4294967296.0;
    }
  }

  static std::string edit_json(nlohmann::json& doc, std::mt19937_64& rng) {
    switch (pick(rng, 6)) {
      case 0: {  // remove a member
        Spot s = walk(doc, rng, true);
        nlohmann::json& obj = *s.value;
        if (!obj.is_object() || obj.empty()) return "remove (nothing)";
        auto it = obj.begin();
        std::advance(it, static_cast<long>(pick(rng, obj.size())));
        const std::string k = it.key();
        obj.erase(it);
        return "remove " + k;
      }
      case 1:
      case 2: {  // a value of another type or range
        Spot s = walk(doc, rng);
        *s.value = odd_value(rng);
        return "replace " + (s.key.empty() ? "#" + std::to_string(s.index) : s.key) + " by " + s.value->dump().substr(0, 30);
      }
      case 3: {  // an array emptied, shortened or with an element repeated
        Spot s = walk(doc, rng, true);
        nlohmann::json& a = *s.value;
        if (!a.is_array() || a.empty()) return "array (none)";
        const size_t i = pick(rng, a.size());
        switch (pick(rng, 3)) {
          case 0: a.clear(); return "clear array";
          case 1: a.erase(i); return "erase element";
          default: a.push_back(a[i]); return "repeat element";
        }
      }
      case 4: {  // an extra member
        Spot s = walk(doc, rng, true);
        if (!s.value->is_object()) return "extra (none)";
        (*s.value)["extra_" + std::to_string(pick(rng, 100))] = odd_value(rng);
        return "extra member";
      }
      default: {  // a number nudged
        Spot s = walk(doc, rng);
        if (!s.value->is_number()) return "nudge (not a number)";
        const int64_t deltas[] = {1, -1, 1000, -1000000, 1LL << 40};
        if (s.value->is_number_float()) *s.value = s.value->get<double>() * -3.0;
        else *s.value = static_cast<int64_t>(static_cast<uint64_t>(s.value->get<int64_t>()) +
                                             static_cast<uint64_t>(deltas[pick(rng, 5)]));  // wraps
        return "nudge " + s.key;
      }
    }
  }

  // doc's text with one member written twice: `"k":v,"k":w`. nlohmann keeps the last, a scan of
  // the text may take the first (the server's slices did). One in three is the top-level
  // "steps", the second array shorter (issue 31, item 2); the rest a member anywhere, with an
  // odd value or the same one again.
  static std::string with_a_key_twice(nlohmann::json doc, std::mt19937_64& rng, std::string& what) {
    nlohmann::json* parent = nullptr;
    std::string key;
    nlohmann::json second;
    if (pick(rng, 3) == 0 && doc.is_object() && doc.contains("steps") && doc["steps"].is_array()) {
      parent = &doc;
      key = "steps";
      what = "top-level ";
      second = doc["steps"];
      if (!second.empty()) second.erase(pick(rng, second.size()));
    } else {
      Spot s = walk(doc, rng);
      for (int tries = 0; tries < 8 && !(s.parent && s.parent->is_object()); ++tries) s = walk(doc, rng);
      if (!(s.parent && s.parent->is_object())) {  // the root's own members then
        parent = &doc;
        key = doc.begin().key();
      } else {
        parent = s.parent;
        key = s.key;
      }
      second = pick(rng, 2) == 0 ? (*parent)[key] : odd_value(rng);
    }
    const nlohmann::json first = (*parent)[key];
    const std::string mark = "\x01minfer-mutator: the member written twice\x01";
    (*parent)[key] = mark;
    std::string text = doc.dump();
    const std::string quoted = nlohmann::json(mark).dump();
    text.replace(text.find(quoted), quoted.size(), first.dump() + "," + nlohmann::json(key).dump() + ":" + second.dump());
    what += "key '" + key + "' twice";
    return text;
  }

  // NUL bytes after the text, then junk or a slice of the text (two writers of one file left
  // the winner's trace, 244k NUL bytes and the loser's bytes).
  static std::string nul_after(std::string& t, std::mt19937_64& rng) {
    const size_t nuls = 1 + (pick(rng, 2) == 0 ? 0 : pick(rng, 300000));
    t.append(nuls, '\0');
    switch (pick(rng, 3)) {
      case 0: t += "junk"; break;
      case 1: t += t.substr(pick(rng, t.size() - nuls), 1 + pick(rng, 5000)); break;
      default: break;  // NULs only
    }
    return "NUL x" + std::to_string(nuls) + " after the text";
  }

  static std::string edit_text(std::string& t, std::mt19937_64& rng) {
    if (t.empty()) t = "{";
    const size_t at = pick(rng, t.size());
    switch (pick(rng, 7)) {
      case 0: {
        const int n = 1 + static_cast<int>(pick(rng, 8));
        for (int i = 0; i < n; ++i) t[pick(rng, t.size())] = static_cast<char>(pick(rng, 256));
        return "flip bytes";
      }
      case 1: t.resize(at); return "cut at " + std::to_string(at);
      case 2: t.erase(at, 1 + pick(rng, 200)); return "delete slice";
      case 3: {
        static const char* junk[] = {"1e309", "-1e400", "18446744073709551616", ",", "]", "}", "\"", "\\u0000",
                                     "\xff\xfe", "null", "[[[[[[[[[[", "\"\\ud800\""};
        t.insert(at, junk[pick(rng, 12)]);
        return "insert junk";
      }
      case 4: {  // a number token replaced by one out of range
        const size_t d = t.find_first_of("0123456789", at);
        if (d == std::string::npos) return "number (none)";
        size_t e = d;
        while (e < t.size() && (std::isdigit(static_cast<unsigned char>(t[e])) || t[e] == '.' || t[e] == 'e' ||
                                t[e] == '-' || t[e] == '+'))
          ++e;
        static const char* big[] = {"1e309", "-1e309", "1e-400", "18446744073709551616", "-9223372036854775809", "0.0"};
        t.replace(d, e - d, big[pick(rng, 6)]);
        return "number out of range";
      }
      case 5: {  // deep nesting, far past the reader's limit
        const size_t n = 1000 + pick(rng, 100000);
        t.insert(at, std::string(n, '['));
        return "nest " + std::to_string(n);
      }
      default: {
        const size_t len = 1 + pick(rng, 500);
        const size_t from = pick(rng, t.size());
        t.insert(at, t.substr(from, len));
        return "duplicate slice";
      }
    }
  }

  nlohmann::json base_;
  std::string base_text_;
};

}  // namespace minfer::trace::testing
