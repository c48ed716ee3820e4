#include "json_read.h"

#include <cstring>
#include <istream>
#include <memory>
#include <streambuf>
#include <unordered_set>
#include <vector>

#include "format/trace_input.h"

namespace minfer::trace {

using nlohmann::json;

namespace {

// nlohmann's DOM builder, wrapped: counts nesting, remembers where it is (for messages) and
// drops members the caller does not want. The parser itself is iterative; only the depth of
// the value it builds needs a bound.
class BoundedSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  BoundedSax(json& root, const JsonReadOptions& o) : dom_(root, false), opt_(o) {}

  bool null() { return scalar([&] { return dom_.null(); }); }
  bool boolean(bool v) { return scalar([&] { return dom_.boolean(v); }); }
  bool number_integer(number_integer_t v) { return scalar([&] { return dom_.number_integer(v); }); }
  bool number_unsigned(number_unsigned_t v) { return scalar([&] { return dom_.number_unsigned(v); }); }
  bool number_float(number_float_t v, const string_t& s) { return scalar([&] { return dom_.number_float(v, s); }); }
  bool string(string_t& v) { return scalar([&] { return dom_.string(v); }); }
  bool binary(binary_t& v) { return scalar([&] { return dom_.binary(v); }); }

  bool start_object(std::size_t n) { return enter(false) && (skipping_ || (count_value() && dom_.start_object(n))); }
  bool start_array(std::size_t n) { return enter(true) && (skipping_ || (count_value() && dom_.start_array(n))); }
  bool end_object() { return leave(false); }
  bool end_array() { return leave(true); }

  bool key(string_t& k) {
    frames_.back().key = k;
    if (skipping_) return true;
    if (!first_time(k)) {
      // nlohmann keeps the last, a scan of the text (the server's slices) may take the first.
      problem_ = "the key '" + k + "' appears twice in one object (readers would disagree on which counts)";
      return false;
    }
    if (opt_.skip_member && opt_.skip_member(k, frames_.size())) {
      skipping_ = true;
      skip_base_ = frames_.size();
      return true;
    }
    return dom_.key(k);
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& ex) {
    byte_ = position;
    if (ex.id == 406) {  // out_of_range: a number beyond double (1e309)
      problem_ = "number " + last_token + " is out of range";
    } else {
      // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
      // -> the part after the position; the byte offset replaces line/column.
      const std::string w = ex.what();
      const size_t colon = w.find(": ", w.find("parse error"));
      problem_ = colon == std::string::npos ? w : w.substr(colon + 2);
    }
    return false;
  }

  bool is_errored() const { return !problem_.empty(); }
  // Where parsing stopped on an error (0 when a callback refused a value: no position known).
  size_t error_byte() const { return byte_; }

  // "t.json: not valid JSON at byte 812 (/steps/0/time_ms): number 1e309 is out of range"
  [[noreturn]] void fail_with(const std::string& what) const {
    std::string msg = what + ": not valid JSON";
    if (byte_ > 0) msg += " at byte " + std::to_string(byte_);
    const std::string at = pointer();
    if (!at.empty()) msg += " (" + at + ")";
    msg += ": " + (problem_.empty() ? std::string("parse failed") : problem_);
    JsonParseError e(msg);
    e.byte = byte_;
    throw e;
  }

 private:
  struct Frame {
    bool array;
    size_t index = 0;
    std::string key;
    size_t keys_begin = 0;  // this object's keys so far: keys_[keys_begin, end), or `many`
    std::unique_ptr<std::unordered_set<std::string>> many;
  };

  // Whether `k` is new in the object being read. Objects are small (a node record has ~10
  // keys): their keys sit on one stack, searched in place; past kFewKeys an object gets a set.
  bool first_time(const std::string& k) {
    static constexpr size_t kFewKeys = 32;
    Frame& f = frames_.back();
    if (f.many) return f.many->insert(k).second;
    for (size_t i = f.keys_begin; i < keys_.size(); ++i)
      if (keys_[i] == k) return false;
    keys_.push_back(k);
    if (keys_.size() - f.keys_begin > kFewKeys) {
      f.many = std::make_unique<std::unordered_set<std::string>>(keys_.begin() + static_cast<std::ptrdiff_t>(f.keys_begin), keys_.end());
      keys_.resize(f.keys_begin);
    }
    return true;
  }

  bool count_value() {
    if (++values_ <= opt_.max_values) return true;
    problem_ = "holds more than " + std::to_string(opt_.max_values) +
               " JSON values (the reader's limit, which bounds its memory)";
    return false;
  }

  template <class F>
  bool scalar(F&& forward) {
    bool ok = true;
    if (skipping_) {
      if (frames_.size() == skip_base_) skipping_ = false;
    } else {
      ok = count_value() && forward();
    }
    next_value();
    return ok;
  }

  bool enter(bool array) {
    if (frames_.size() >= opt_.max_depth) {
      problem_ = "nested deeper than " + std::to_string(opt_.max_depth) + " levels";
      return false;
    }
    frames_.push_back(Frame{array, 0, {}, keys_.size(), nullptr});
    return true;
  }

  bool leave(bool array) {
    keys_.resize(frames_.back().keys_begin);
    frames_.pop_back();
    bool ok = true;
    if (skipping_) {
      if (frames_.size() == skip_base_) skipping_ = false;
    } else {
      ok = array ? dom_.end_array() : dom_.end_object();
    }
    next_value();
    return ok;
  }

  void next_value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }

  std::string pointer() const {
    std::string p;
    for (const Frame& f : frames_) {
      p.push_back('/');
      if (f.array) {
        p.append(std::to_string(f.index));
        continue;
      }
      for (char c : f.key) {
        if (c == '~') p.append("~0");
        else if (c == '/') p.append("~1");
        else p.push_back(c);
      }
    }
    if (p.size() > 200) {
      p.resize(197);
      p.append("...");
    }
    return p;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const JsonReadOptions& opt_;
  std::vector<Frame> frames_;
  std::vector<std::string> keys_;  // the keys of the open objects (Frame::keys_begin)
  bool skipping_ = false;
  size_t skip_base_ = 0;
  size_t byte_ = 0;
  uint64_t values_ = 0;
  std::string problem_;
};

// nlohmann ends its input at a NUL byte as at the end of the file, so a document followed by
// "\0junk" read as valid. No JSON text holds a NUL (strings escape it): the input is cut at
// the first one, and a document that parsed up to it is refused all the same.
constexpr size_t kNoNul = static_cast<size_t>(-1);

// Lets nlohmann read a TraceInput as a stream, one buffer at a time, up to its first NUL byte.
class TraceInputBuf : public std::streambuf {
 public:
  explicit TraceInputBuf(TraceInput& in) : in_(in), buf_(size_t(1) << 16) {}
  size_t first_nul() const { return first_nul_; }

 protected:
  int_type underflow() override {
    if (first_nul_ != kNoNul) return traits_type::eof();
    size_t n = in_.read(buf_.data(), buf_.size());
    if (n == 0) return traits_type::eof();
    if (const void* z = std::memchr(buf_.data(), 0, n)) {
      const size_t at = static_cast<size_t>(static_cast<const char*>(z) - buf_.data());
      first_nul_ = delivered_ + at;
      n = at;
      if (n == 0) return traits_type::eof();
    }
    delivered_ += n;
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(buf_[0]);
  }

 private:
  TraceInput& in_;
  std::vector<char> buf_;
  size_t delivered_ = 0;
  size_t first_nul_ = kNoNul;
};

// Parses `input`, which ends at its first NUL byte; first_nul() says where that was (kNoNul:
// none), once the parser has read up to it.
template <class Input, class FirstNul>
json parse_with(Input&& input, FirstNul first_nul_of, const std::string& what, const JsonReadOptions& options) {
  json out;
  BoundedSax sax(out, options);
  const bool ok = json::sax_parse(std::forward<Input>(input), &sax) && !sax.is_errored();
  const size_t first_nul = first_nul_of();
  if (first_nul != kNoNul && (ok || sax.error_byte() >= first_nul)) {
    JsonParseError e(what + ": not valid JSON at byte " + std::to_string(first_nul) +
                     ": a NUL byte (a JSON text holds none: the file is damaged, or has bytes after its end)");
    e.byte = first_nul;
    throw e;
  }
  if (!ok) sax.fail_with(what);
  return out;
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& what, const JsonReadOptions& options) {
  const size_t nul = text.find('\0');
  return parse_with(text.substr(0, nul), [nul] { return nul == std::string_view::npos ? kNoNul : nul; }, what, options);
}

json parse_json_stream(TraceInput& in, const std::string& what, const JsonReadOptions& options) {
  TraceInputBuf buf(in);
  std::istream stream(&buf);
  return parse_with(stream, [&buf] { return buf.first_nul(); }, what, options);
}

}  // namespace minfer::trace
