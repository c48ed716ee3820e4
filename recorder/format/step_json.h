// A finished step (step_record.h) as the JSON text of a trace's Step object
// (docs/trace-format.md), in parts that can be formatted at once on several threads: their
// concatenation is the step. The recorder formats with it, and so does the recovery of a killed
// run's journal (trace_recover.h), so both write the same bytes.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "format/step_record.h"

namespace minfer::trace {

// What formatting depends on besides the step itself.
struct StepFormat {
  SummarySpec spec;
  int top_k = 20;     // logits entries per step
  int outliers = 0;   // outliers per node record (0: the field is left out)
  bool operator==(const StepFormat&) const = default;
};

class StepFormatter {
 public:
  using TokenText = std::function<std::string(int32_t)>;
  StepFormatter(StepFormat f, TokenText token_text) : f_(f), token_text_(std::move(token_text)) {}

  const StepFormat& format() const { return f_; }
  // The step as parts: head (up to `"nodes":[`), node records kNodesPerPart at a time, tail.
  std::vector<std::function<std::string()>> parts(const std::shared_ptr<const StepData>& d) const;
  std::string text(const StepData& d) const;  // the parts joined, on this thread
  // One node's record (docs/trace-format.md, NodeRecord) without the step's GPU fields: what the
  // step's parts write per node, and what a live run streams per node (viz-server/live_runs.cpp,
  // with a statistics-only format), so the page sees the same record either way.
  std::string node_record(const NodeData& d) const;

  // Node records per part. A fixed count keeps a step's bytes the same on every machine; a 0.5b
  // decode step (~500 nodes) makes ~60 parts of ~0.1 ms each: the workers finish a step about
  // together (with 16 parts, two rounds on 14 workers took longer than the ~0.8 ms the next
  // step takes), and each part is still well above the cost of handing it over.
  static constexpr size_t kNodesPerPart = 8;

 private:
  std::string text_of(int32_t id) const { return token_text_ ? token_text_(id) : std::string(); }
  std::string head_json(const StepData& d) const;
  std::string node_records_json(const StepData& d, size_t begin, size_t end) const;
  std::string logits_json(const LogitsData& d) const;
  std::string tail_json(const StepData& d) const;

  StepFormat f_;
  TokenText token_text_;
};

}  // namespace minfer::trace
