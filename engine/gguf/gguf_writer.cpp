// GGUFWriter: GGUF v3 layout (header, metadata, tensor infos, aligned data), written to
// "<path>.tmp" and renamed into place; any failure removes the temp file and throws.
#include "gguf/gguf_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace minfer {
namespace {

constexpr uint32_t kVersion = 3;
constexpr size_t kMaxTensorName = 63;  // ggml's GGML_MAX_NAME (64) including the NUL

struct Bytes {
  std::vector<uint8_t>& out;
  void append(const void* p, size_t n) {
    size_t at = out.size();
    out.resize(at + n);
    if (n) std::memcpy(out.data() + at, p, n);
  }
  template <class T>
  void put(T v) {
    append(&v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    append(s.data(), s.size());
  }
};

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// Scalars must fit their declared type; `what` names the key for the message.
void check_range(const GGUFValue& v, const std::string& what) {
  auto u_max = [&](uint64_t max) {
    if (v.u > max) fail(what, ": value ", v.u, " does not fit ", gguf_value_type_name(v.type));
  };
  auto i_range = [&](int64_t lo, int64_t hi) {
    if (v.i < lo || v.i > hi)
      fail(what, ": value ", v.i, " does not fit ", gguf_value_type_name(v.type));
  };
  switch (v.type) {
    case GGUFValueType::UINT8: return u_max(UINT8_MAX);
    case GGUFValueType::UINT16: return u_max(UINT16_MAX);
    case GGUFValueType::UINT32: return u_max(UINT32_MAX);
    case GGUFValueType::BOOL: return u_max(1);
    case GGUFValueType::INT8: return i_range(INT8_MIN, INT8_MAX);
    case GGUFValueType::INT16: return i_range(INT16_MIN, INT16_MAX);
    case GGUFValueType::INT32: return i_range(INT32_MIN, INT32_MAX);
    case GGUFValueType::FLOAT32:
      if (std::isfinite(v.f) && std::fabs(v.f) > FLT_MAX)
        fail(what, ": value ", v.f, " does not fit FLOAT32");
      return;
    default: return;
  }
}

// `level`: how many arrays enclose this value (0 for a top-level value).
void encode_value(Bytes& b, const GGUFValue& v, const std::string& what, int level) {
  check_range(v, what);
  switch (v.type) {
    case GGUFValueType::UINT8: return b.put<uint8_t>(static_cast<uint8_t>(v.u));
    case GGUFValueType::INT8: return b.put<int8_t>(static_cast<int8_t>(v.i));
    case GGUFValueType::UINT16: return b.put<uint16_t>(static_cast<uint16_t>(v.u));
    case GGUFValueType::INT16: return b.put<int16_t>(static_cast<int16_t>(v.i));
    case GGUFValueType::UINT32: return b.put<uint32_t>(static_cast<uint32_t>(v.u));
    case GGUFValueType::INT32: return b.put<int32_t>(static_cast<int32_t>(v.i));
    case GGUFValueType::UINT64: return b.put<uint64_t>(v.u);
    case GGUFValueType::INT64: return b.put<int64_t>(v.i);
    case GGUFValueType::FLOAT32: return b.put<float>(static_cast<float>(v.f));
    case GGUFValueType::FLOAT64: return b.put<double>(v.f);
    case GGUFValueType::BOOL: return b.put<uint8_t>(static_cast<uint8_t>(v.u));
    case GGUFValueType::STRING: return b.put_string(v.s);
    case GGUFValueType::ARRAY: {
      if (!gguf_value_type_valid(static_cast<uint32_t>(v.elem_type)))
        fail(what, ": invalid array element type id ", static_cast<uint32_t>(v.elem_type));
      if (level + 1 > kGGUFMaxArrayNesting)
        fail(what, ": arrays nested deeper than ", kGGUFMaxArrayNesting, " levels");
      b.put<uint32_t>(static_cast<uint32_t>(v.elem_type));
      b.put<uint64_t>(v.size());
      uint64_t k = 0;
      v.for_each([&](const GGUFValue& e) {
        if (e.type != v.elem_type)
          fail(what, ": element ", k, " has type ", gguf_value_type_name(e.type),
               " in an array of ", gguf_value_type_name(v.elem_type));
        encode_value(b, e, what, level + 1);
        ++k;
      });
      return;
    }
  }
  fail(what, ": invalid value type id ", static_cast<uint32_t>(v.type));
}

// Deletes the temp file it created unless the write completed and was renamed into place.
struct TempFile {
  std::string path;
  FILE* f = nullptr;
  bool created = false;  // false: whatever is at the path is not ours to remove
  bool committed = false;
  ~TempFile() {
    if (f) std::fclose(f);
    if (created && !committed) std::remove(path.c_str());
  }
};

// Creates the temp file new (O_EXCL | O_NOFOLLOW): a symlink there is refused, never written
// through; a regular file there is a killed writer's leftover and is replaced. nullptr + errno
// on other failures.
FILE* create_temp(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      FILE* f = ::fdopen(fd, "wb");
      if (!f) ::close(fd);
      return f;
    }
    if (errno != EEXIST) return nullptr;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      fail("'", path, "' is a symlink or not a regular file; refusing to write through it (remove it)");
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return nullptr;
  }
  errno = EEXIST;  // another writer recreated it at once
  return nullptr;
}

}  // namespace

void GGUFWriter::set(const std::string& key, GGUFValue v) {
  if (key == "general.alignment") {
    if (!v.is_integer()) fail("gguf writer: general.alignment must be an integer");
    uint64_t a = v.i < 0 ? 0 : v.u + static_cast<uint64_t>(v.i);
    if (a == 0 || (a & (a - 1)) != 0 || a > (uint64_t{1} << 24))
      fail("gguf writer: general.alignment ", v.to_string(), " is not a power of two <= 2^24");
    alignment_ = a;
  }
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}

void GGUFWriter::set_alignment(uint64_t a) {
  if (a > UINT32_MAX) fail("gguf writer: alignment ", a, " does not fit UINT32");
  set("general.alignment", GGUFValue::u32(static_cast<uint32_t>(a)));
}

uint64_t GGUFWriter::check_tensor(const std::string& name, const std::vector<int64_t>& ne,
                                  WeightType type) const {
  const std::string what = "gguf writer: tensor '" + name + "'";
  if (name.empty()) fail("gguf writer: tensor name is empty");
  if (name.size() > kMaxTensorName)
    fail(what, ": name is ", name.size(), " bytes, longer than ggml's ", kMaxTensorName);
  for (const auto& t : tensors_)
    if (t.name == name) fail(what, ": duplicate tensor name");
  if (ne.empty() || ne.size() > 4) fail(what, ": has ", ne.size(), " dimensions (1 to 4)");
  int64_t n = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] <= 0) fail(what, ": dimension ", d, " is ", ne[d], " (must be positive)");
    if (__builtin_mul_overflow(n, ne[d], &n)) fail(what, ": element count overflows");
  }
  const WeightTypeInfo* wt = find_weight_type(static_cast<uint32_t>(type));
  if (!wt) fail(what, ": unknown weight type id ", static_cast<uint32_t>(type));
  if (ne[0] % wt->block_elems != 0)
    fail(what, ": row length ", ne[0], " is not a multiple of ", wt->name, "'s block size ",
         wt->block_elems);
  return static_cast<uint64_t>(n / wt->block_elems) * wt->block_bytes;
}

void GGUFWriter::add_tensor(const std::string& name, std::vector<int64_t> ne, WeightType type,
                            std::vector<uint8_t> data) {
  const uint64_t need = check_tensor(name, ne, type);
  if (data.size() != need)
    fail("gguf writer: tensor '", name, "': data has ", data.size(), " bytes, ",
         ::minfer::name(type), " of this shape needs ", need);
  tensors_.push_back({name, std::move(ne), type, std::move(data), need, {}});
}

void GGUFWriter::add_tensor_deferred(const std::string& name, std::vector<int64_t> ne,
                                     WeightType type,
                                     std::function<std::vector<uint8_t>()> produce) {
  const uint64_t need = check_tensor(name, ne, type);
  tensors_.push_back({name, std::move(ne), type, {}, need, std::move(produce)});
}

std::vector<uint8_t> GGUFWriter::tensor_bytes(const Tensor& t) const {
  if (!t.produce) return t.data;
  std::vector<uint8_t> d = t.produce();
  if (d.size() != t.size)
    fail("gguf writer: tensor '", t.name, "': producer made ", d.size(), " bytes, the shape needs ", t.size);
  return d;
}

std::vector<uint8_t> GGUFWriter::encode_header(const std::string& label) const {
  std::vector<uint8_t> out;
  Bytes b{out};
  b.put<uint32_t>(0x46554747);  // "GGUF"
  b.put<uint32_t>(kVersion);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(kv_.size());
  for (const auto& [key, v] : kv_) {
    b.put_string(key);
    b.put<uint32_t>(static_cast<uint32_t>(v.type));
    encode_value(b, v, label + ": metadata key '" + key + "'", 0);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    b.put_string(t.name);
    b.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) b.put<int64_t>(d);
    b.put<uint32_t>(static_cast<uint32_t>(t.type));
    b.put<uint64_t>(offset);
    offset += align_up(t.size, alignment_);
  }
  out.resize(align_up(out.size(), alignment_), 0);
  return out;
}

std::vector<uint8_t> GGUFWriter::header() const { return encode_header("gguf writer"); }

uint64_t GGUFWriter::data_size() const {
  uint64_t n = 0;
  for (const auto& t : tensors_) n += align_up(t.size, alignment_);
  return n;
}

std::vector<uint8_t> GGUFWriter::to_bytes() const {
  std::vector<uint8_t> out = encode_header("gguf writer");
  for (const auto& t : tensors_) {
    const std::vector<uint8_t> d = t.produce ? tensor_bytes(t) : std::vector<uint8_t>{};
    const std::vector<uint8_t>& data = t.produce ? d : t.data;
    out.insert(out.end(), data.begin(), data.end());
    out.resize(align_up(out.size(), alignment_), 0);
  }
  return out;
}

void GGUFWriter::write(const std::string& path) const {
  const std::vector<uint8_t> header = encode_header(path);  // validation errors come first
  TempFile tmp{path + ".tmp"};
  auto io_fail = [&](const char* step) {
    int e = errno;
    fail(path, ": ", step, " '", tmp.path, "' failed: ", std::strerror(e));
  };
  tmp.f = create_temp(tmp.path);
  if (!tmp.f) io_fail("creating");
  tmp.created = true;
  auto put = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, tmp.f) != n) io_fail("writing");
  };
  put(header.data(), header.size());
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const auto& t : tensors_) {
    if (t.produce) {
      const std::vector<uint8_t> d = tensor_bytes(t);
      put(d.data(), d.size());
    } else {
      put(t.data.data(), t.data.size());
    }
    put(zeros.data(), align_up(t.size, alignment_) - t.size);
  }
  if (std::fflush(tmp.f) != 0) io_fail("flushing");
  if (::fsync(fileno(tmp.f)) != 0) io_fail("syncing");
  FILE* f = tmp.f;
  tmp.f = nullptr;
  if (std::fclose(f) != 0) io_fail("closing");
  if (std::rename(tmp.path.c_str(), path.c_str()) != 0) {
    int e = errno;
    fail(path, ": renaming '", tmp.path, "' into place failed: ", std::strerror(e));
  }
  tmp.committed = true;
}

}  // namespace minfer
