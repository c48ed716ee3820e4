// Crafted journal records (not mutated ones): each field valid on its own, the fields that the
// step formatter reads together disagreeing. decode_step must refuse them with an Error naming
// the record; formatting them would read past a buffer (summarize_logits over `sampled` with
// the logits' length, compare_logits over the reference with the step's length).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "step_codec.h"
#include "step_json.h"
#include "step_record.h"

using namespace minfer;
using namespace minfer::trace;

namespace {

LogitsData logits_of(size_t n, float base) {
  LogitsData l;
  for (size_t i = 0; i < n; ++i) l.logits.push_back(base + static_cast<float>(i % 7));
  l.chosen = 3;
  l.temperature = 0.8f;
  return l;
}

StepData step_with(std::optional<LogitsData> logits, std::optional<LogitsData> ref = std::nullopt) {
  StepData d;
  d.info.phase = Phase::Decode;
  d.info.step = 1;
  d.info.pos0 = 4;
  d.info.tokens = {3};
  d.graph_id = "g0";
  d.logits = std::move(logits);
  d.ref_logits = std::move(ref);
  return d;
}

// Encodes d, decodes it and formats it as `minfer-trace recover` would.
std::string round_trip_text(const StepData& d) {
  std::vector<char> buf;
  const std::string bytes(encode_step(d, buf));
  const StepData back = decode_step(bytes.data(), bytes.size(), "crafted.journal");
  return StepFormatter(StepFormat{SummarySpec{}, 5, 0}, [](int32_t) { return std::string("t"); }).text(back);
}

void expect_refused(const StepData& d, const std::string& why) {
  try {
    round_trip_text(d);
    ADD_FAILURE() << "a record with " << why << " was decoded and formatted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("crafted.journal"), std::string::npos) << m;
    EXPECT_NE(m.find("not a journaled step"), std::string::npos) << m;
  }
}

}  // namespace

TEST(JournalInvariants, ConsistentRecordsFormat) {
  LogitsData l = logits_of(1000, 0.5f);
  l.has_sampled = true;
  l.sampled = l.logits;
  EXPECT_NE(round_trip_text(step_with(l, logits_of(1000, 0.25f))).find("\"sampled\""), std::string::npos);
}

TEST(JournalInvariants, SampledLogitsShorterThanTheLogitsAreRefused) {
  LogitsData l = logits_of(1 << 20, 0.5f);
  l.has_sampled = true;
  l.sampled.assign(16, 1.0f);
  expect_refused(step_with(l), "16 sampled logits beside 2^20 logits");
}

TEST(JournalInvariants, SampledLogitsLongerThanTheLogitsAreRefused) {
  LogitsData l = logits_of(16, 0.5f);
  l.has_sampled = true;
  l.sampled.assign(4096, 1.0f);
  expect_refused(step_with(l), "4096 sampled logits beside 16 logits");
}

TEST(JournalInvariants, ReferenceLogitsOfAnotherLengthAreRefused) {
  expect_refused(step_with(logits_of(1 << 16, 0.5f), logits_of(8, 0.5f)), "8 reference logits beside 2^16");
  expect_refused(step_with(logits_of(8, 0.5f), logits_of(1 << 16, 0.5f)), "2^16 reference logits beside 8");
}
