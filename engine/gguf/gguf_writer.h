// GGUF v3 writer. Output is written to "<path>.tmp" and renamed into place, so a failed
// write never leaves a half-written file over a good one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/weight_type.h"
#include "gguf/gguf_value.h"

namespace minfer {

class GGUFWriter {
 public:
  void set(const std::string& key, GGUFValue v);  // replaces an existing key, keeps order
  void set_alignment(uint64_t a);                 // also writes general.alignment
  // ne in GGUF order (ne[0] fastest). data must hold exactly the bytes the shape/type need.
  void add_tensor(const std::string& name, std::vector<int64_t> ne, WeightType type,
                  std::vector<uint8_t> data);
  void write(const std::string& path) const;

 private:
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GGUFValue>> kv_;
  struct Tensor {
    std::string name;
    std::vector<int64_t> ne;
    WeightType type;
    std::vector<uint8_t> data;
  };
  std::vector<Tensor> tensors_;
};

}  // namespace minfer
