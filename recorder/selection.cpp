#include "selection.h"

#include <fnmatch.h>

#include <cctype>

#include "core/error.h"

namespace minfer::trace {

// POSIX fnmatch(3) without flags: '*' also matches '.', and '[…]' classes work too.
bool glob_match(std::string_view p, std::string_view t) {
  return ::fnmatch(std::string(p).c_str(), std::string(t).c_str(), 0) == 0;
}

namespace {
std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      size_t a = cur.find_first_not_of(" \t"), b = cur.find_last_not_of(" \t");
      out.push_back(a == std::string::npos ? "" : cur.substr(a, b - a + 1));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool parse_int(const std::string& s, int& v) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  v = std::stoi(s);
  return true;
}
}  // namespace

NodeFilter::NodeFilter(const std::string& spec, const std::string& what) {
  if (spec.empty() || spec == "*") return;
  for (auto& p : split_commas(spec)) {
    if (p.empty()) fail(what, ": empty pattern in node list '", spec, "'");
    patterns_.push_back(p);
  }
}

bool NodeFilter::matches(std::string_view name) const {
  if (patterns_.empty()) return true;
  for (const auto& p : patterns_)
    if (glob_match(p, name)) return true;
  return false;
}

StepFilter::StepFilter(const std::string& spec, const std::string& what) {
  if (spec.empty() || spec == "all") return;
  all_ = false;
  if (spec == "none") return;
  for (auto& part : split_commas(spec)) {
    if (part == "prefill") { ranges_.push_back({0, 0}); continue; }
    if (part == "decode") { ranges_.push_back({1, -1}); continue; }
    const size_t dash = part.find('-');
    int lo, hi = 0;
    bool ok;
    if (dash == std::string::npos) {
      ok = parse_int(part, lo);
      hi = lo;
    } else {
      ok = parse_int(part.substr(0, dash), lo);
      const std::string rest = part.substr(dash + 1);
      if (rest.empty()) hi = -1;
      else ok = ok && parse_int(rest, hi) && hi >= lo;
    }
    if (!ok)
      fail(what, ": '", part, "' in '", spec,
           "' is not a step or range (use all, none, prefill, decode, 3, 0-3, 5-)");
    ranges_.push_back({lo, hi});
  }
}

bool StepFilter::contains(int step) const {
  if (all_) return true;
  for (const auto& r : ranges_)
    if (step >= r.lo && (r.hi < 0 || step <= r.hi)) return true;
  return false;
}

}  // namespace minfer::trace
