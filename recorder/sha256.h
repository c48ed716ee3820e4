// SHA-256 (FIPS 180-4) for the model hash in trace metadata (meta.model.sha256), so the CLI
// needs no crypto library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace minfer::trace {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex_digest();  // finishes; the object is spent afterwards

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(const void* data, size_t n);
// Hex digest of a whole file; throws Error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace minfer::trace
