#include "tokenizer/bpe_merges.h"

#include <queue>

#include "core/error.h"
#include "tokenizer/byte_level.h"

namespace minfer {

BpeMerges::BpeMerges(const std::vector<std::string>& tokens, const std::vector<std::string>& merges,
                     const std::string& source) {
  // First spelling wins when a string appears twice (padding never collides with real tokens).
  std::unordered_map<std::string_view, int32_t> id_of;
  id_of.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) id_of.emplace(tokens[i], static_cast<int32_t>(i));

  for (int b = 0; b < 256; ++b) {
    std::string spelling = byte_level::encode(std::string(1, static_cast<char>(b)));
    auto it = id_of.find(spelling);
    if (it == id_of.end())
      fail(source, ": tokenizer.ggml.tokens has no token for byte 0x", std::hex, b,
           " (spelled '", spelling, "'): not a byte-level BPE vocabulary");
    byte_token_[b] = it->second;
  }

  merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    size_t sp = m.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= m.size() || m.find(' ', sp + 1) != std::string::npos)
      fail(source, ": tokenizer.ggml.merges[", r, "] = '", m, "' is not two tokens separated by one space");
    std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    std::string joined = std::string(left) + std::string(right);
    auto l = id_of.find(left), rt = id_of.find(right), j = id_of.find(joined);
    if (l == id_of.end() || rt == id_of.end() || j == id_of.end())
      fail(source, ": tokenizer.ggml.merges[", r, "] = '", m, "' names a token missing from tokenizer.ggml.tokens");
    // A repeated pair keeps its last rank, as the reference implementations do.
    merges_[key(l->second, rt->second)] = Merge{static_cast<int32_t>(r), j->second};
  }
}

std::vector<int32_t> BpeMerges::encode_piece(std::string_view bytes) const {
  if (bytes.empty()) return {};
  {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(std::string(bytes));
    if (it != cache_.end()) return it->second;
  }
  std::vector<int32_t> ids = merge_all(bytes);
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= kCacheLimit) cache_.clear();
  cache_.emplace(std::string(bytes), ids);
  return ids;
}

std::vector<int32_t> BpeMerges::merge_all(std::string_view bytes) const {
  const int n = static_cast<int>(bytes.size());
  struct Symbol {
    int32_t id;  // -1 once merged into its left neighbour
    int prev, next;
  };
  std::vector<Symbol> sym(n);
  for (int i = 0; i < n; ++i) sym[i] = {byte_token_[static_cast<uint8_t>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1};

  // A candidate merge of the pair starting at `pos`; it is stale when either side changed.
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t left, right, result;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int pos) {
    if (pos < 0 || sym[pos].next < 0) return;
    int32_t l = sym[pos].id, r = sym[sym[pos].next].id;
    auto it = merges_.find(key(l, r));
    if (it != merges_.end()) queue.push({it->second.rank, pos, l, r, it->second.result});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);

  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Symbol& s = sym[c.pos];
    if (s.id != c.left || s.next < 0 || sym[s.next].id != c.right) continue;
    Symbol& right = sym[s.next];
    s.id = c.result;
    right.id = -1;
    s.next = right.next;
    if (s.next >= 0) sym[s.next].prev = c.pos;
    consider(s.prev);
    consider(c.pos);
  }

  std::vector<int32_t> ids;
  for (int i = 0; i >= 0; i = sym[i].next) ids.push_back(sym[i].id);
  return ids;
}

}  // namespace minfer
