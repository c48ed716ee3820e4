#include "format/step_codec.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "core/error.h"

namespace minfer::trace {

namespace {

// Each record type's fields, listed once for both directions: `a(fields...)` writes them with
// an Encoder and reads them with a Decoder. A field added to one of these structs must be added
// here too; the size checks make the build say so (libstdc++ on a 64-bit host).
static_assert(sizeof(TensorStats) == 64 && sizeof(ValueGrid) == 48 && sizeof(Histogram) == 56,
              "a summary field changed: update step_codec.cpp");
static_assert(sizeof(TensorCompare) == 56 && sizeof(Outlier) == 16 && sizeof(BlockScales) == 40,
              "a paired-trace field changed: update step_codec.cpp");
static_assert(sizeof(KernelRecord) == 160 && sizeof(StepGpuTime) == 96 && sizeof(NodeGpuTime) == 16,
              "a GPU time field changed: update step_codec.cpp");
static_assert(sizeof(LogitsSummary) == 72 && sizeof(TopEntry) == 24, "a logits field changed: update step_codec.cpp");
static_assert(sizeof(NodeData) == 600 && sizeof(LogitsData) == 144 && sizeof(StepData) == 560,
              "a step record field changed: update step_codec.cpp");

// Numbers, and structs of 8-byte (or two 4-byte) numbers without padding, go as their bytes; a
// step has ~30 000 fields, one copy each would cost ~3x the time. The rest field by field.
template <class T> inline constexpr bool kBulk = std::is_arithmetic_v<T> || std::is_enum_v<T>;
template <> inline constexpr bool kBulk<TensorStats> = true;
template <> inline constexpr bool kBulk<TensorCompare> = true;
template <> inline constexpr bool kBulk<Outlier> = true;
template <> inline constexpr bool kBulk<NodeTime> = true;
template <> inline constexpr bool kBulk<NodeGpuTime> = true;
static_assert(sizeof(NodeTime) == 16, "a node time field changed: update step_codec.cpp");

template <class A, class T> void fields(A& a, T& g) requires std::is_same_v<std::remove_const_t<T>, ValueGrid> {
  a(g.rows, g.cols, g.row_stride, g.col_stride, g.values);
}
template <class A, class T> void fields(A& a, T& h) requires std::is_same_v<std::remove_const_t<T>, Histogram> {
  a(h.lo, h.hi, h.counts, h.underflow, h.overflow);
}
template <class A, class T> void fields(A& a, T& t) requires std::is_same_v<std::remove_const_t<T>, TensorSummary> {
  a(t.stats, t.grid, t.hist);
}
template <class A, class T> void fields(A& a, T& b) requires std::is_same_v<std::remove_const_t<T>, BlockScales> {
  a(b.min, b.max, b.mean, b.blocks, b.block_size);
}
template <class A, class T> void fields(A& a, T& e) requires std::is_same_v<std::remove_const_t<T>, TopEntry> {
  a(e.id, e.p, e.logit);
}
template <class A, class T> void fields(A& a, T& s) requires std::is_same_v<std::remove_const_t<T>, LogitsSummary> {
  a(s.n_vocab, s.nonfinite, s.top, s.entropy, s.chosen, s.chosen_rank, s.chosen_p);
}
template <class A, class T> void fields(A& a, T& l) requires std::is_same_v<std::remove_const_t<T>, LogitsData> {
  a(l.logits, l.sampled, l.summary, l.chosen, l.temperature, l.repeat_penalty, l.has_sampled, l.sampled_is_raw);
}
template <class A, class T> void fields(A& a, T& k) requires std::is_same_v<std::remove_const_t<T>, KernelRecord> {
  a(k.name, k.node, k.unattributed, k.covers, k.graph_node, k.start_ns, k.duration_ns, k.grid, k.block, k.registers,
    k.shared_bytes);
}
template <class A, class T> void fields(A& a, T& g) requires std::is_same_v<std::remove_const_t<T>, StepGpuTime> {
  a(g.kernels, g.gpu_ms, g.busy_ms, g.event_ms, g.host_ms, g.dropped, g.note);
}
template <class A, class T> void fields(A& a, T& d) requires std::is_same_v<std::remove_const_t<T>, NodeData> {
  // no_output is one of kNoOutputReasons: its index goes to disk (-1: none).
  int32_t reason = -1;
  for (int32_t i = 0; i < static_cast<int32_t>(std::size(kNoOutputReasons)); ++i)
    if (d.no_output && std::strcmp(d.no_output, kNoOutputReasons[i]) == 0) reason = i;
  if (d.no_output && reason < 0) fail("journal: no_output reason '", d.no_output, "' is not in kNoOutputReasons");
  a(d.id, d.rows, d.cols, d.time, reason, d.summary, d.ref, d.full, d.local, d.outliers, d.ref_present, d.act_scales);
  if constexpr (A::kReading) {
    if (reason < -1 || reason >= static_cast<int32_t>(std::size(kNoOutputReasons))) a.bad("no_output reason");
    d.no_output = reason < 0 ? nullptr : kNoOutputReasons[reason];
  }
}
template <class A, class T> void fields(A& a, T& d) requires std::is_same_v<std::remove_const_t<T>, StepData> {
  a(d.info.phase, d.info.step, d.info.pos0, d.info.tokens, d.seconds, d.graph_id, d.start_ms, d.selected, d.nodes,
    d.logits, d.ref_logits, d.gpu, d.node_gpu);
}


// Writes the fields into `buf` from its start, growing it when needed (a journal reuses it, so
// from the second step on a step is plain copies; std::string::append cost ~2x per field).
struct Encoder {
  static constexpr bool kReading = false;
  std::vector<char>& buf;
  size_t n = 0;

  template <class... T> void operator()(const T&... v) { (put(v), ...); }

  void raw(const void* p, size_t len) {
    if (len == 0) return;  // an empty vector's data() may be null, which memcpy must not get
    if (buf.size() - n < len) buf.resize(std::max(2 * buf.size(), n + len));
    std::memcpy(buf.data() + n, p, len);
    n += len;
  }
  template <class T> void put(const T& v) {
    if constexpr (kBulk<T>) raw(&v, sizeof v);
    else fields(*this, v);
  }
  void put(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    raw(s.data(), s.size());
  }
  template <class T, size_t N> void put(const std::array<T, N>& v) {
    for (const T& x : v) put(x);
  }
  template <class T> void put(const std::vector<T>& v) {
    put(static_cast<uint64_t>(v.size()));
    if constexpr (kBulk<T>) raw(v.data(), v.size() * sizeof(T));
    else for (const T& x : v) put(x);
  }
  template <class T> void put(const std::optional<T>& v) {
    put(v.has_value());
    if (v) put(*v);
  }
};

struct Decoder {
  static constexpr bool kReading = true;
  const char* p;
  const char* end;
  const std::string& what;

  template <class... T> void operator()(T&... v) { (get(v), ...); }

  [[noreturn]] void bad(const char* field) { fail(what, ": not a journaled step (", field, ")"); }
  void raw(void* dst, size_t n) {
    if (n == 0) return;  // an empty vector's data() may be null
    if (static_cast<size_t>(end - p) < n) bad("ends early");
    std::memcpy(dst, p, n);
    p += n;
  }
  size_t count(size_t elem_size) {
    uint64_t n = 0;
    raw(&n, sizeof n);
    if (elem_size > 0 && n > static_cast<uint64_t>(end - p) / elem_size) bad("a length beyond the record");
    return static_cast<size_t>(n);
  }
  template <class T> void get(T& v) {
    if constexpr (kBulk<T>) {
      if constexpr (std::is_same_v<T, bool>) {
        uint8_t b = 0;
        raw(&b, 1);
        if (b > 1) bad("a flag");
        v = b == 1;
      } else {
        raw(&v, sizeof v);
      }
    } else {
      fields(*this, v);
    }
  }
  void get(std::string& s) {
    s.resize(count(1));
    raw(s.data(), s.size());
  }
  template <class T, size_t N> void get(std::array<T, N>& v) {
    for (T& x : v) get(x);
  }
  template <class T> void get(std::vector<T>& v) {
    // Every element takes at least one byte: a corrupt length cannot allocate past the record.
    v.resize(count(kBulk<T> ? sizeof(T) : 1));
    if constexpr (kBulk<T> && !std::is_same_v<T, bool>) raw(v.data(), v.size() * sizeof(T));
    else for (T& x : v) get(x);
  }
  template <class T> void get(std::optional<T>& v) {
    bool has = false;
    get(has);
    if (!has) return v.reset();
    v.emplace();
    get(*v);
  }
};

}  // namespace

std::string_view encode_step(const StepData& d, std::vector<char>& buf) {
  Encoder e{buf};
  e.put(d);
  return {buf.data(), e.n};
}

StepData decode_step(const char* p, size_t n, const std::string& what) {
  StepData d;
  Decoder dec{p, p + n, what};
  dec.get(d);
  if (dec.p != dec.end) dec.bad("bytes after the step");
  if (static_cast<int>(d.info.phase) < 0 || static_cast<int>(d.info.phase) > 1) dec.bad("phase");
  for (const NodeData& nd : d.nodes) {
    if (nd.id < 0 || static_cast<size_t>(nd.id) >= d.node_gpu.size()) dec.bad("a node id");
    // The formatter writes a reference's summary with its comparison (`ref` with `cmp`).
    if (nd.ref && !nd.full) dec.bad("a reference summary without its comparison");
  }
  // What the step formatter reads together (step_json.cpp): the sampler's logits with the
  // logits' length, the reference's logits with the step's.
  for (const std::optional<LogitsData>* l : {&d.logits, &d.ref_logits})
    if (*l && !(*l)->summary && (*l)->has_sampled && !(*l)->sampled_is_raw && (*l)->sampled.size() != (*l)->logits.size())
      dec.bad("sampled logits of another length than the logits");
  if (d.logits && d.ref_logits && d.ref_logits->logits.size() != d.logits->logits.size())
    dec.bad("reference logits of another length than the step's");
  return d;
}

}  // namespace minfer::trace
