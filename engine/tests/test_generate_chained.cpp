// The generation loop's chained decode (exec/generate.cpp): when the backend takes a step's token
// from the previous step's argmax on its side (Backend::chains_greedy_token), step N+1 is
// launched before N's token is read; if N's token ends the generation, N+1 was speculative and
// is dropped. A backend that does this is emulated over the CPU backend (it substitutes the last
// launched step's argmax for a chained step's token), so the loop is checked without a GPU:
// the same tokens as unchained, the speculative step launched but never counted, no chaining
// when an observer reads steps the backend cannot keep, and on every path a token shown only
// after the observer flushed its step.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "exec/generate.h"
#include "model/model.h"
#include "test_models.h"
#include "tokenizer/tokenizer.h"

using namespace minfer;

namespace {

int32_t argmax(const std::vector<float>& v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;  // lowest id on ties, as Sampler::pick
  return static_cast<int32_t>(best);
}

class ChainingCpu final : public Backend, public BackendProbes {
 public:
  // keeps: claim BackendProbes::keeps_step_results (only for observers that read no node outputs).
  ChainingCpu(const Model& m, bool chain, bool keeps = false) : inner_(m, MatmulPath::MMQ), chain_(chain), keeps_(keeps) {}
  std::map<int, int32_t> pick_at;  // launch number (1 = prefill) -> the pick the "device" makes instead
  int launches = 0, chained = 0;
  std::function<void()> before_launch;  // a test's check at every run_step

  std::string name() const override { return "chaining-cpu"; }
  std::string device() const override { return inner_.device(); }
  MatmulPath matmul_path() const override { return inner_.matmul_path(); }
  void reserve_context(int64_t n) override { inner_.reserve_context(n); }
  void run_step(const Graph& g, const StepInfo& s) override {
    if (before_launch) before_launch();
    StepInfo t = s;
    if (s.token_on_device) {
      EXPECT_TRUE(last_one_token_ && g.n_tokens == 1) << "a chained step must follow a one-token step";
      t.tokens = {token_[cur_]};
      ++chained;
    }
    inner_.run_step(g, t);
    std::vector<float> logits;
    inner_.read_logits(g, logits);
    ++launches;
    const auto forced = pick_at.find(launches);
    cur_ ^= 1;
    token_[cur_] = forced != pick_at.end() ? forced->second : argmax(logits);
    last_one_token_ = g.n_tokens == 1;
  }
  const NodeOutput* output(const Node& n) const override { return inner_.output(n); }
  void read_logits(const Graph& g, std::vector<float>& out) override { inner_.read_logits(g, out); }
  std::string matmul_kernel(const Node& n) const override { return inner_.matmul_kernel(n); }
  bool greedy_on_device() const override { return true; }
  int32_t read_greedy_token(const Graph&, bool previous) override { return token_[cur_ ^ (previous ? 1 : 0)]; }
  bool chains_greedy_token() const override { return chain_; }
  BackendProbes& probes() override { return *this; }
  bool keeps_step_results(const StepRecording&) const override { return keeps_; }

 private:
  CpuBackend inner_;
  bool chain_, keeps_;
  std::array<int32_t, 2> token_{-1, -1};  // the last two launched steps' picks
  int cur_ = 0;
  bool last_one_token_ = false;
};

// Only what the loop asks: which ids end a generation.
struct EogTokenizer final : Tokenizer {
  int32_t eog;
  explicit EogTokenizer(int32_t id) : eog(id) {}
  std::vector<int32_t> encode(std::string_view) const override { return {}; }
  std::string decode(const std::vector<int32_t>&) const override { return {}; }
  std::string token_bytes(int32_t) const override { return {}; }
  int32_t vocab_size() const override { return 151936; }
  int32_t eos_id() const override { return eog; }
  int32_t bos_id() const override { return -1; }
  bool adds_bos() const override { return false; }
  bool is_end_of_generation(int32_t id) const override { return id == eog; }
};

struct StepCounter : Observer {
  std::vector<int32_t> inputs;  // each decode step's token, as the observer is shown it
  void on_step_begin(const Graph&, const StepInfo& s) override {
    if (s.phase == Phase::Decode) inputs.push_back(s.tokens.at(0));
  }
  void on_node_view(const Node&, const NodeView&) override {}
};

// Counts ended steps and how many are safe; reads no node outputs. Its writer makes one more
// step safe each time caught_up() is asked every `pace` calls (0: only flush() does).
struct FlushCounter : Observer {
  int ended = 0, flushed = 0, pace = 1, asked = 0;
  bool step_by_step = false;  // what recording() asks for
  explicit FlushCounter(int p = 1) : pace(p) {}
  StepRecording recording(const StepInfo&) const override {
    StepRecording r;
    r.step_by_step = step_by_step;
    return r;
  }
  bool wants(const Node&) const override { return false; }
  void on_node_view(const Node&, const NodeView&) override {}
  void on_step_end(const StepInfo&, double) override { ++ended; }
  void flush() override { flushed = ended; }
  bool caught_up() override {
    if (pace > 0 && ++asked % pace == 0 && flushed < ended) ++flushed;
    return flushed == ended;
  }
};

const std::vector<int32_t> kPrompt = {9707, 11, 1879, 0, 576};

class GenerateChained : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = minfer::testing::generated_model("chained-q4_0", "tiny", GenWeights::Q4_0);
    if (path_.empty()) GTEST_SKIP() << "the Qwen vocabulary (npm ci) is not installed";
    m_ = Model::load(path_);
  }
  std::string path_;
  std::unique_ptr<Model> m_;
};

TEST_F(GenerateChained, GivesTheUnchainedTokens) {
  GenerateOptions opt;
  opt.n_predict = 10;
  opt.stop_at_eog = false;
  ChainingCpu on(*m_, true), off(*m_, false);
  const GenerateResult a = generate(*m_, on, nullptr, kPrompt, opt, nullptr);
  const GenerateResult b = generate(*m_, off, nullptr, kPrompt, opt, nullptr);
  EXPECT_EQ(a.generated, b.generated);
  ASSERT_EQ(a.generated.size(), 10u);
  EXPECT_EQ(a.decode_s.size(), 9u);
  // Prefill, then 9 decode steps: the first fed from the host, the other 8 chained; none
  // launched past n_predict.
  EXPECT_EQ(on.launches, 10);
  EXPECT_EQ(on.chained, 8);
  EXPECT_EQ(off.launches, 10);
  EXPECT_EQ(off.chained, 0);
}

TEST_F(GenerateChained, DropsTheSpeculativeStepAfterAnEndOfGeneration) {
  constexpr int32_t kEog = 151645;  // <|im_end|>
  EogTokenizer tok(kEog);
  GenerateOptions opt;
  opt.n_predict = 10;
  ChainingCpu on(*m_, true), off(*m_, false);
  on.pick_at[4] = off.pick_at[4] = kEog;  // decode step 3 picks the end of generation
  std::vector<int32_t> streamed;
  const GenerateResult a = generate(*m_, on, &tok, kPrompt, opt, nullptr, [&](int32_t t) { streamed.push_back(t); });
  const GenerateResult b = generate(*m_, off, &tok, kPrompt, opt, nullptr);
  EXPECT_EQ(a.generated, b.generated);
  ASSERT_EQ(a.generated.size(), 4u);  // the prefill's pick, decode steps 1-3
  EXPECT_EQ(a.generated.back(), kEog);
  EXPECT_EQ(streamed, a.generated) << "the speculative step's token is never streamed";
  EXPECT_EQ(a.decode_s.size(), 3u);
  EXPECT_EQ(on.launches, 5) << "decode step 4 was launched before step 3's token was read";
  EXPECT_EQ(on.chained, 3);
  EXPECT_EQ(off.launches, 4);
}

TEST_F(GenerateChained, NotWhenTheObserverReadsStepsTheBackendDoesNotKeep) {
  GenerateOptions opt;
  opt.n_predict = 6;
  opt.stop_at_eog = false;
  ChainingCpu on(*m_, true), off(*m_, false);
  StepCounter seen_on, seen_off;
  const GenerateResult a = generate(*m_, on, nullptr, kPrompt, opt, &seen_on);
  const GenerateResult b = generate(*m_, off, nullptr, kPrompt, opt, &seen_off);
  EXPECT_EQ(a.generated, b.generated);
  EXPECT_EQ(on.chained, 0) << "keeps_step_results is false: step N must be read before N+1 runs";
  EXPECT_EQ(seen_on.inputs, seen_off.inputs);
  ASSERT_EQ(seen_on.inputs.size(), 5u);
  for (size_t i = 0; i < seen_on.inputs.size(); ++i) EXPECT_EQ(seen_on.inputs[i], a.generated[i]) << "step " << i + 1;
}

TEST_F(GenerateChained, ShowsATokenOnlyAfterItsStepWasFlushed) {
  // Every loop path: synchronous, held (the backend keeps results), chained, chained and held;
  // an observer that is always caught up, one that catches up on every other question, one
  // that never does without a flush.
  for (bool chain : {false, true})
    for (bool keeps : {false, true})
      for (int pace : {1, 2, 0}) {
        GenerateOptions opt;
        opt.n_predict = 12;
        opt.stop_at_eog = false;
        ChainingCpu b(*m_, chain, keeps);
        FlushCounter obs(pace);
        std::vector<int32_t> shown;
        const std::string where = "chain " + std::to_string(chain) + ", keeps " + std::to_string(keeps) +
                                  ", pace " + std::to_string(pace);
        const GenerateResult r = generate(*m_, b, nullptr, kPrompt, opt, &obs, [&](int32_t t) {
          // Token i comes from step i (0: the prefill): steps 0..i are safe. When the observer
          // is caught up, it is shown once token i+1 is read (step i+2 may be launched: launch
          // i+3, prefill being launch 1); else at the latest once token i+3 is read (the loop
          // waits when 3 tokens are unshown).
          const int i = static_cast<int>(shown.size());
          EXPECT_GE(obs.flushed, i + 1) << "token " << i << ", " << where;
          EXPECT_LE(b.launches, i + (pace == 1 ? 3 : 5)) << "token " << i << " shown late, " << where;
          shown.push_back(t);
        });
        EXPECT_EQ(shown, r.generated) << "every token once, in order, " << where;
        EXPECT_EQ(obs.ended, 12) << "every step ended once, " << where;
        EXPECT_EQ(b.chained > 0, chain && keeps) << where;
      }
}

TEST_F(GenerateChained, StepByStepWritesEveryStepBeforeTheNextIsLaunched) {
  // A backend that could chain and hold, an observer whose writer never catches up by itself:
  // every launch still finds every ended step flushed, and every token shown right away.
  GenerateOptions opt;
  opt.n_predict = 8;
  opt.stop_at_eog = false;
  ChainingCpu b(*m_, true, true);
  FlushCounter obs(0);
  obs.step_by_step = true;
  b.before_launch = [&] { EXPECT_EQ(obs.flushed, obs.ended) << "launch " << b.launches + 1 << " before the last step was written"; };
  int shown = 0;
  const GenerateResult r = generate(*m_, b, nullptr, kPrompt, opt, &obs, [&](int32_t) {
    EXPECT_EQ(b.launches, shown + 1) << "token " << shown << " shown after a later step was launched";
    ++shown;
  });
  EXPECT_EQ(shown, 8);
  EXPECT_EQ(b.chained, 0);
  EXPECT_EQ(obs.ended, 8);
  // The same backend and observer without the option overlap steps.
  ChainingCpu c(*m_, true, true);
  FlushCounter fast(0);
  generate(*m_, c, nullptr, kPrompt, opt, &fast);
  EXPECT_GT(c.chained, 0);
}

}  // namespace
