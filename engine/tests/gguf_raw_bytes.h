// Little-endian byte builder for hand-made GGUF images (tests of the reader and the writer).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minfer::testing {

struct RawGGUF {
  std::vector<uint8_t> b;
  template <class T>
  RawGGUF& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
    return *this;
  }
  RawGGUF& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  RawGGUF& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return put<uint32_t>(0x46554747).put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  }
  RawGGUF& kv_u32(const std::string& key, uint32_t v) { return str(key).put<uint32_t>(4).put(v); }
  RawGGUF& tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) put<int64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  RawGGUF& pad(size_t a) {
    b.resize((b.size() + a - 1) / a * a, 0);
    return *this;
  }
  // Pads to the data section (alignment a) and appends n data bytes.
  RawGGUF& data(size_t n, size_t a = 32) {
    pad(a);
    b.resize(b.size() + n, 0x5a);
    return *this;
  }
};

}  // namespace minfer::testing
