// GGUFFile: opening (mmap) or wrapping memory, and the typed metadata / tensor lookups.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "gguf/gguf_reader.h"

namespace minfer {

int64_t GGUFTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;  // the reader has checked that this does not overflow
  return n;
}

std::string GGUFTensorInfo::shape_string() const {
  std::ostringstream os;
  os << '[';
  for (size_t k = 0; k < ne.size(); ++k) os << (k ? ", " : "") << ne[k];
  os << ']';
  return os.str();
}

std::unique_ptr<GGUFFile> GGUFFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would wait for a writer; it is refused below as not regular.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(path, ": cannot stat: ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file");
  }
  std::unique_ptr<GGUFFile> f(new GGUFFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {  // mmap refuses length 0; an empty file fails in parse() as truncated
    void* m = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(path, ": cannot map ", f->size_, " bytes: ", std::strerror(e));
    }
    f->mapping_ = m;
    f->base_ = static_cast<const uint8_t*>(m);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  f->parse();
  return f;
}

std::unique_ptr<GGUFFile> GGUFFile::from_memory(const uint8_t* data, size_t size,
                                                const std::string& label) {
  std::unique_ptr<GGUFFile> f(new GGUFFile());
  f->path_ = label;
  f->base_ = data;
  f->size_ = size;
  f->parse();
  return f;
}

std::unique_ptr<GGUFFile> GGUFFile::header_from_memory(const uint8_t* data, size_t size,
                                                       const std::string& label) {
  std::unique_ptr<GGUFFile> f(new GGUFFile());
  f->path_ = label;
  f->base_ = data;
  f->size_ = size;
  f->header_only_ = true;
  f->parse();
  return f;
}

GGUFFile::~GGUFFile() {
  if (mapping_) ::munmap(mapping_, size_);
}

const GGUFValue* GGUFFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GGUFValue& GGUFFile::get(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) fail(path_, ": metadata key '", key, "' missing");
  return *v;
}

namespace {
std::string key_label(const std::string& path, const std::string& key) {
  return path + ": metadata key '" + key + "'";
}

// The array under `key`, checked to hold elements accepted by `ok`.
template <class Pred>
const GGUFValue& array_of(const GGUFFile& f, const std::string& key, Pred ok,
                          const char* expected) {
  const GGUFValue& v = f.get(key);
  if (v.type != GGUFValueType::ARRAY)
    fail(key_label(f.path(), key), " has type ", gguf_value_type_name(v.type),
         ", expected an array of ", expected);
  if (!ok(v.elem_type))
    fail(key_label(f.path(), key), " is an array of ", gguf_value_type_name(v.elem_type),
         ", expected an array of ", expected);
  return v;
}

bool integer_type(GGUFValueType t) {
  return t != GGUFValueType::BOOL && t != GGUFValueType::STRING && t != GGUFValueType::ARRAY &&
         t != GGUFValueType::FLOAT32 && t != GGUFValueType::FLOAT64;
}
}  // namespace

int64_t GGUFFile::get_int(const std::string& key) const {
  return get(key).as_int(key_label(path_, key));
}
double GGUFFile::get_float(const std::string& key) const {
  return get(key).as_float(key_label(path_, key));
}
bool GGUFFile::get_bool(const std::string& key) const {
  return get(key).as_bool(key_label(path_, key));
}
std::string GGUFFile::get_string(const std::string& key) const {
  return get(key).as_string(key_label(path_, key));
}

std::vector<std::string> GGUFFile::get_string_array(const std::string& key) const {
  const GGUFValue& v = array_of(
      *this, key, [](GGUFValueType t) { return t == GGUFValueType::STRING; }, "STRING");
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(v.size()));
  v.for_each([&](const GGUFValue& e) { out.push_back(e.s); });
  return out;
}

std::vector<int64_t> GGUFFile::get_int_array(const std::string& key) const {
  const GGUFValue& v = array_of(*this, key, integer_type, "integers");
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(v.size()));
  std::string what = key_label(path_, key) + " element";
  v.for_each([&](const GGUFValue& e) { out.push_back(e.as_int(what)); });
  return out;
}

std::vector<float> GGUFFile::get_float_array(const std::string& key) const {
  const GGUFValue& v = array_of(
      *this, key, [](GGUFValueType t) { return integer_type(t) || t == GGUFValueType::FLOAT32 ||
                                               t == GGUFValueType::FLOAT64; },
      "numbers");
  std::vector<float> out;
  out.reserve(static_cast<size_t>(v.size()));
  std::string what = key_label(path_, key) + " element";
  v.for_each([&](const GGUFValue& e) { out.push_back(static_cast<float>(e.as_float(what))); });
  return out;
}

int64_t GGUFFile::get_int_or(const std::string& key, int64_t fallback) const {
  return find(key) ? get_int(key) : fallback;
}
double GGUFFile::get_float_or(const std::string& key, double fallback) const {
  return find(key) ? get_float(key) : fallback;
}
bool GGUFFile::get_bool_or(const std::string& key, bool fallback) const {
  return find(key) ? get_bool(key) : fallback;
}
std::string GGUFFile::get_string_or(const std::string& key, const std::string& fallback) const {
  return find(key) ? get_string(key) : fallback;
}

const GGUFTensorInfo* GGUFFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GGUFTensorInfo& GGUFFile::tensor(const std::string& name) const {
  const GGUFTensorInfo* t = find_tensor(name);
  if (!t) fail(path_, ": tensor '", name, "' missing");
  return *t;
}

}  // namespace minfer
