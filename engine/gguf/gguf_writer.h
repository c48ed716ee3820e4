// GGUF v3 writer. Output is written to "<path>.tmp" (created new: a symlink there is refused,
// never written through) and renamed into place, so a failed write never leaves a half-written
// file over a good one.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/weight_type.h"
#include "gguf/gguf_value.h"

namespace minfer {

// Values are checked when written: a scalar must fit its type (UINT8 holds 0..255), every
// array element must have the array's element type. Problems throw Error naming the key/tensor.
class GGUFWriter {
 public:
  void set(const std::string& key, GGUFValue v);  // replaces an existing key, keeps order
  void set_alignment(uint64_t a);                 // also writes general.alignment
  // ne in GGUF order (ne[0] fastest). data must hold exactly the bytes the shape/type need.
  // Names must be unique and shorter than 64 bytes (ggml's limit, so other tools read them).
  void add_tensor(const std::string& name, std::vector<int64_t> ne, WeightType type,
                  std::vector<uint8_t> data);
  // The same, with the bytes made only when write() reaches the tensor (one tensor in memory
  // at a time: multi-GB models). produce() must return exactly the bytes the shape/type need.
  void add_tensor_deferred(const std::string& name, std::vector<int64_t> ne, WeightType type,
                           std::function<std::vector<uint8_t>()> produce);
  void write(const std::string& path) const;
  // The same bytes write() puts in the file (for tests and in-memory parsing).
  std::vector<uint8_t> to_bytes() const;
  // Only the header write() puts first (metadata, tensor infos, padding up to the data section),
  // without making any deferred tensor's bytes; GGUFFile::header_from_memory parses it. Cheap
  // for any model size: the layout of a multi-GB file can be checked without writing it.
  std::vector<uint8_t> header() const;
  uint64_t data_size() const;  // bytes of the data section write() would put after the header

  uint64_t alignment() const { return alignment_; }
  size_t n_tensors() const { return tensors_.size(); }

 private:
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GGUFValue>> kv_;
  struct Tensor {
    std::string name;
    std::vector<int64_t> ne;
    WeightType type;
    std::vector<uint8_t> data;
    uint64_t size = 0;                             // bytes the shape/type need
    std::function<std::vector<uint8_t>()> produce;  // set for deferred tensors
  };
  // Checks name and shape; returns the byte count the shape/type need.
  uint64_t check_tensor(const std::string& name, const std::vector<int64_t>& ne, WeightType type) const;
  std::vector<uint8_t> tensor_bytes(const Tensor& t) const;  // data, or produce() checked
  std::vector<Tensor> tensors_;

  // Header, metadata, tensor infos and the padding up to the data section.
  std::vector<uint8_t> encode_header(const std::string& label) const;
};

}  // namespace minfer
