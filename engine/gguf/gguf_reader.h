// GGUF v2/v3 reader: mmaps the file, parses metadata and tensor infos with every length,
// count and offset bounds-checked. Any problem throws Error("<file>: <what> ...").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/weight_type.h"
#include "gguf/gguf_value.h"

namespace minfer {

struct GGUFTensorInfo {
  std::string name;
  std::vector<int64_t> ne;   // GGUF order: ne[0] is the fastest (row length)
  WeightType type;
  uint64_t offset = 0;       // relative to the data section
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  int64_t n_elements() const;
};

class GGUFFile {
 public:
  // Maps and parses a file. Throws Error naming the file on any problem.
  static std::unique_ptr<GGUFFile> open(const std::string& path);
  // Parses an in-memory image (not copied: must outlive the object). `label` names it in errors.
  static std::unique_ptr<GGUFFile> from_memory(const uint8_t* data, size_t size,
                                               const std::string& label);
  ~GGUFFile();
  GGUFFile(const GGUFFile&) = delete;
  GGUFFile& operator=(const GGUFFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }

  const std::vector<std::pair<std::string, GGUFValue>>& metadata() const { return kv_; }
  const GGUFValue* find(const std::string& key) const;  // nullptr when absent
  // Typed getters: throw Error "<file>: metadata key '<key>' missing / has type X, expected Y".
  const GGUFValue& get(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;

  const std::vector<GGUFTensorInfo>& tensors() const { return tensors_; }
  const GGUFTensorInfo* find_tensor(const std::string& name) const;  // nullptr when absent
  const GGUFTensorInfo& tensor(const std::string& name) const;       // throws when absent

 private:
  GGUFFile() = default;
  void parse();
  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap on destruction when set
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GGUFValue>> kv_;
  std::vector<GGUFTensorInfo> tensors_;
};

}  // namespace minfer
