// GGUFFile::parse: header, metadata, tensor infos and the data layout of a GGUF v2/v3 image.
// Nothing is allocated from a count before the count is shown to fit in the bytes left,
// so a corrupt file costs at most a small multiple of its own size in memory.
#include <algorithm>
#include <limits>
#include <numeric>

#include "gguf/gguf_cursor.h"
#include "gguf/gguf_decode.h"
#include "gguf/gguf_reader.h"

namespace minfer {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kMaxDims = 4;         // as ggml (GGML_MAX_DIMS)
constexpr uint64_t kMaxAlignment = uint64_t{1} << 24;

// ggml type ids minfer does not implement, named so the message says what the file holds.
const char* ggml_type_name(uint32_t id) {
  switch (id) {
    case 4: return "Q4_2 (removed from ggml)";
    case 5: return "Q4_3 (removed from ggml)";
    case 10: return "Q2_K";
    case 11: return "Q3_K";
    case 16: return "IQ2_XXS";
    case 17: return "IQ2_XS";
    case 18: return "IQ3_XXS";
    case 19: return "IQ1_S";
    case 20: return "IQ4_NL";
    case 21: return "IQ3_S";
    case 22: return "IQ2_S";
    case 23: return "IQ4_XS";
    case 24: return "I8";
    case 25: return "I16";
    case 26: return "I32";
    case 27: return "I64";
    case 28: return "F64";
    case 29: return "IQ1_M";
    case 34: return "TQ1_0";
    case 35: return "TQ2_0";
    case 39: return "MXFP4";
  }
  return nullptr;
}

bool is_power_of_two(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

// A key or tensor name as shown in messages: control bytes and quotes escaped, long names cut,
// so that a corrupt name cannot garble the message (or the terminal showing it).
std::string printable(const std::string& name) {
  constexpr size_t kMax = 96;
  std::string out;
  for (size_t k = 0; k < name.size() && k < kMax; ++k) {
    auto ch = static_cast<unsigned char>(name[k]);
    if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\') {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (name.size() > kMax) out += "...";
  return out;
}

std::string key_context(const std::string& key) { return "metadata key '" + printable(key) + "'"; }

std::string tensor_context(size_t index, const std::string& name) {
  return "tensor '" + printable(name) + "' (tensor info " + std::to_string(index) + ")";
}

}  // namespace

void GGUFFile::parse() {
  GGUFCursor c(base_, size_, path_);

  // Header: magic, version, tensor count, metadata count.
  uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kMagic) {
    char shown[5] = {};
    for (int k = 0; k < 4; ++k) {
      char ch = static_cast<char>((magic >> (8 * k)) & 0xff);
      shown[k] = (ch >= 32 && ch < 127) ? ch : '?';
    }
    fail(path_, ": not a GGUF file (bad magic '", shown, "', expected 'GGUF')");
  }
  version_ = c.read<uint32_t>("version");
  if (version_ == 1) fail(path_, ": GGUF version 1 is not supported (only versions 2 and 3)");
  if (version_ != 2 && version_ != 3) {
    if (__builtin_bswap32(version_) == 2 || __builtin_bswap32(version_) == 3)
      fail(path_, ": big-endian GGUF files are not supported");
    fail(path_, ": unsupported GGUF version ", version_, " (only versions 2 and 3)");
  }
  uint64_t n_tensors = c.read<uint64_t>("tensor count");
  uint64_t n_kv = c.read<uint64_t>("metadata count");
  // Each metadata entry takes at least 8 (key length) + 4 (type) + 1 bytes, each tensor info
  // 8 (name length) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset) bytes.
  if (n_kv > c.remaining() / 13)
    fail(path_, ": metadata count ", n_kv, " cannot fit in the ", c.remaining(),
         " bytes left in the file");
  if (n_tensors > c.remaining() / 32)
    fail(path_, ": tensor count ", n_tensors, " cannot fit in the ", c.remaining(),
         " bytes left in the file");

  // Metadata.
  kv_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t k = 0; k < n_kv; ++k) {
    c.set_context("metadata entry " + std::to_string(k));
    std::string key = c.read_string("key");
    c.set_context(key_context(key));
    if (kv_index_.count(key)) c.fail_here("duplicate key");
    uint32_t type_id = c.read<uint32_t>("value type");
    if (!gguf_value_type_valid(type_id)) c.fail_here("unknown value type id ", type_id);
    GGUFValue v = gguf_read_value(c, static_cast<GGUFValueType>(type_id), 0);
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(v));
  }
  c.set_context("");

  if (const GGUFValue* a = find("general.alignment")) {
    if (!a->is_integer())
      fail(path_, ": metadata key 'general.alignment' has type ", gguf_value_type_name(a->type),
           ", expected an integer");
    // An integer lives in u (unsigned types) or i (signed types); the other member is 0.
    uint64_t av = a->i < 0 ? 0 : a->u + static_cast<uint64_t>(a->i);
    if (!is_power_of_two(av) || av > kMaxAlignment)
      fail(path_, ": metadata key 'general.alignment' = ", a->to_string(),
           " is not a power of two between 1 and ", kMaxAlignment);
    alignment_ = av;
  }

  // Tensor infos.
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    c.set_context("tensor info " + std::to_string(k));
    GGUFTensorInfo t;
    t.name = c.read_string("tensor name");
    c.set_context(tensor_context(static_cast<size_t>(k), t.name));
    if (tensor_index_.count(t.name)) c.fail_here("duplicate tensor name");
    uint32_t n_dims = c.read<uint32_t>("dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      c.fail_here("has ", n_dims, " dimensions (supported: 1 to ", kMaxDims, ")");
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      int64_t n = c.read<int64_t>("dimension");
      if (n <= 0) c.fail_here("dimension ", d, " is ", n, " (must be positive)");
      if (__builtin_mul_overflow(n_elements, n, &n_elements))
        c.fail_here("element count overflows (dimension ", d, " is ", n, ")");
      t.ne.push_back(n);
    }
    uint32_t type_id = c.read<uint32_t>("type");
    const WeightTypeInfo* wt = find_weight_type(type_id);
    if (!wt) {
      if (const char* known = ggml_type_name(type_id))
        c.fail_here("type ", known, " (id ", type_id, ") is not supported by minfer");
      c.fail_here("unknown type id ", type_id);
    }
    t.type = wt->type;
    if (t.ne[0] % wt->block_elems != 0)
      c.fail_here("row length ", t.ne[0], " is not a multiple of ", wt->name, "'s block size ",
                  wt->block_elems);
    // n_elements fits int64 and each block is at most a few hundred bytes: no overflow in uint64.
    t.nbytes = static_cast<size_t>(static_cast<uint64_t>(n_elements / wt->block_elems) *
                                   static_cast<uint64_t>(wt->block_bytes));
    t.offset = c.read<uint64_t>("data offset");
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  c.set_context("");

  // Data section: starts at the next multiple of the alignment after the tensor infos.
  uint64_t header_end = c.pos();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  for (GGUFTensorInfo& t : tensors_) {
    const std::string shown = printable(t.name);
    if (t.offset % alignment_ != 0)
      fail(path_, ": tensor '", shown, "': data offset ", t.offset,
           " is not a multiple of the alignment ", alignment_);
    uint64_t begin = 0;
    if (__builtin_add_overflow(data_offset_, t.offset, &begin))
      fail(path_, ": tensor '", shown, "': data offset ", t.offset, " is out of range");
    if (header_only_) {  // no data section in the image: t.data stays nullptr
      uint64_t end = 0;
      if (__builtin_add_overflow(begin, static_cast<uint64_t>(t.nbytes), &end))
        fail(path_, ": tensor '", shown, "': data offset ", t.offset, " is out of range");
      continue;
    }
    if (begin > size_ || t.nbytes > size_ - begin)
      fail(path_, ": tensor '", shown, "': data [offset ", begin, ", ", t.nbytes,
           " bytes] past end of file (size ", size_, ")");
    t.data = base_ + begin;
  }

  // Tensors must not share bytes: overlapping data means corrupt offsets.
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GGUFTensorInfo& prev = tensors_[order[k - 1]];
    const GGUFTensorInfo& cur = tensors_[order[k]];
    if (cur.offset < prev.offset + prev.nbytes)
      fail(path_, ": tensor '", printable(cur.name), "': data [offset ", data_offset_ + cur.offset,
           ", ", cur.nbytes, " bytes] overlaps tensor '", printable(prev.name), "' [offset ",
           data_offset_ + prev.offset, ", ", prev.nbytes, " bytes]");
  }
}

}  // namespace minfer
