// Byte-pair merging of one pre-tokenized piece: starts from one symbol per byte and applies
// the lowest-ranked merge first (leftmost on ties) until no ranked pair is left, the order
// HF tokenizers and the reference JavaScript implementation use. Results are cached per piece.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace minfer {

class BpeMerges {
 public:
  // tokens: vocabulary spellings by id; merges: "left right" spellings in rank order.
  // `source` names the file in error messages.
  BpeMerges(const std::vector<std::string>& tokens, const std::vector<std::string>& merges,
            const std::string& source);

  // Token ids of the raw bytes of one piece.
  std::vector<int32_t> encode_piece(std::string_view bytes) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  std::vector<int32_t> merge_all(std::string_view bytes) const;

  int32_t byte_token_[256];
  std::unordered_map<uint64_t, Merge> merges_;

  static constexpr size_t kCacheLimit = 1 << 16;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace minfer
