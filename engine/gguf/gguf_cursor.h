// A bounds-checked little-endian reader over a byte range, used by the GGUF parser.
// Every read checks the remaining length first; a short read throws
// Error("<label>: truncated file: <context>: <what> needs N bytes at offset P, only R left ...").
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace minfer {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

class GGUFCursor {
 public:
  GGUFCursor(const uint8_t* data, size_t size, const std::string& label)
      : data_(data), size_(size), label_(label) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }
  const std::string& label() const { return label_; }

  // What is being parsed ("metadata key 'x'", "tensor info 3"); prefixed to errors.
  void set_context(std::string ctx) { context_ = std::move(ctx); }
  const std::string& context() const { return context_; }

  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // Steps over n bytes (checked like a read).
  void skip(size_t n, const char* what) {
    need(n, what);
    pos_ += n;
  }
  const uint8_t* data_at(size_t pos) const { return data_ + pos; }

  // A GGUF string: uint64 length, then that many bytes (not NUL-terminated).
  std::string read_string(const char* what) {
    uint64_t len = read<uint64_t>(what);
    if (len > remaining())
      fail_here(what, " length ", len, " exceeds the ", remaining(), " bytes left in the file");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

  // Throws "<label>: <context>: <args...>".
  template <class... Args>
  [[noreturn]] void fail_here(const Args&... args) const {
    if (context_.empty()) fail(label_, ": ", args...);
    fail(label_, ": ", context_, ": ", args...);
  }

 private:
  void need(size_t n, const char* what) const {
    if (n > remaining()) {
      if (context_.empty())
        fail(label_, ": truncated file: ", what, " needs ", n, " bytes at offset ", pos_,
             ", only ", remaining(), " left (file size ", size_, ")");
      fail(label_, ": truncated file: ", context_, ": ", what, " needs ", n, " bytes at offset ",
           pos_, ", only ", remaining(), " left (file size ", size_, ")");
    }
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string label_;
  std::string context_;
};

}  // namespace minfer
