// Which nodes and which steps a trace records: comma-separated glob patterns over node names
// ("blk.*.attn_*,logits") and step lists ("all", "none", "prefill", "decode", "0-3,10", "5-").
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace minfer::trace {

// fnmatch(3) without flags: '*' matches any run of characters (dots included), '?' one
// character, '[abc]' one of a set; the rest is literal.
bool glob_match(std::string_view pattern, std::string_view text);

class NodeFilter {
 public:
  NodeFilter() = default;
  // spec "" or "*": every node. `what` names the option in errors.
  NodeFilter(const std::string& spec, const std::string& what);
  bool all() const { return patterns_.empty(); }
  bool matches(std::string_view name) const;

 private:
  std::vector<std::string> patterns_;
};

class StepFilter {
 public:
  StepFilter() = default;  // all steps
  StepFilter(const std::string& spec, const std::string& what);
  bool contains(int step) const;

 private:
  struct Range { int lo, hi; };  // inclusive; hi < 0: open-ended
  std::vector<Range> ranges_;
  bool all_ = true;
};

}  // namespace minfer::trace
