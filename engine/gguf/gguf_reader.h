// GGUF v2/v3 reader: mmaps the file, parses metadata and tensor infos with every length,
// count and offset bounds-checked. Any problem throws Error("<file>: <what> ...").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
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
  int64_t n_rows() const { return ne.empty() || ne[0] == 0 ? 0 : n_elements() / ne[0]; }
  std::string shape_string() const;  // "[896, 151936]"
};

class GGUFFile {
 public:
  // Maps and parses a file. Throws Error naming the file on any problem.
  static std::unique_ptr<GGUFFile> open(const std::string& path);
  // Parses an in-memory image (not copied: must outlive the object). `label` names it in errors.
  static std::unique_ptr<GGUFFile> from_memory(const uint8_t* data, size_t size,
                                               const std::string& label);
  // Parses a header alone (as GGUFWriter::header makes it: no data section follows). Metadata
  // and tensor infos are checked as open() checks them, tensor offsets for alignment and
  // overlap but not against the image's end; every tensor's data is nullptr.
  static std::unique_ptr<GGUFFile> header_from_memory(const uint8_t* data, size_t size,
                                                      const std::string& label);
  ~GGUFFile();
  GGUFFile(const GGUFFile&) = delete;
  GGUFFile& operator=(const GGUFFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }  // aligned start of the data section

  const std::vector<std::pair<std::string, GGUFValue>>& metadata() const { return kv_; }
  const GGUFValue* find(const std::string& key) const;  // nullptr when absent
  // Typed getters: throw Error "<file>: metadata key '<key>' missing / has type X, expected Y".
  const GGUFValue& get(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;
  std::vector<float> get_float_array(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  // Optional keys: the fallback when absent, the same type errors when present.
  int64_t get_int_or(const std::string& key, int64_t fallback) const;
  double get_float_or(const std::string& key, double fallback) const;
  bool get_bool_or(const std::string& key, bool fallback) const;
  std::string get_string_or(const std::string& key, const std::string& fallback) const;

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
  bool header_only_ = false;  // header_from_memory: tensor data is not in the image
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GGUFValue>> kv_;
  std::vector<GGUFTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> kv_index_, tensor_index_;
};

}  // namespace minfer
