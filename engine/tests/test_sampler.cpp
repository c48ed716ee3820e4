#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "sampler/sampler.h"

using namespace minfer;

namespace {
std::vector<float> random_logits(int n, uint64_t seed) {
  std::mt19937_64 r(seed);
  std::normal_distribution<float> d(0, 3);
  std::vector<float> l(static_cast<size_t>(n));
  for (auto& x : l) x = d(r);
  return l;
}
}  // namespace

TEST(Sampler, GreedyPicksArgmax) {
  auto l = random_logits(1000, 1);
  SamplerOptions o;
  o.temperature = 0;
  Sampler s(o);
  int best = 0;
  for (int i = 1; i < 1000; ++i)
    if (l[i] > l[best]) best = i;
  EXPECT_EQ(s.sample(l.data(), 1000, {}), best);
}

TEST(Sampler, SeededIsDeterministic) {
  auto l = random_logits(500, 2);
  SamplerOptions o;
  o.temperature = 0.8f;
  o.seed = 99;
  Sampler a(o), b(o);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(l.data(), 500, {}), b.sample(l.data(), 500, {}));
}

TEST(Sampler, TopKRestrictsChoices) {
  auto l = random_logits(300, 3);
  SamplerOptions o;
  o.temperature = 2.0f;
  o.top_k = 3;
  o.top_p = 1.0f;
  Sampler s(o);
  std::vector<int> idx(300);
  for (int i = 0; i < 300; ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](int a, int b) { return l[a] > l[b]; });
  for (int i = 0; i < 200; ++i) {
    int t = s.sample(l.data(), 300, {});
    EXPECT_TRUE(t == idx[0] || t == idx[1] || t == idx[2]);
  }
}

TEST(Sampler, FrequenciesFollowSoftmax) {
  std::vector<float> l = {1.0f, 2.0f, 0.5f, 1.5f};
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_k = 0;
  o.top_p = 1.0f;
  Sampler s(o);
  std::map<int, int> c;
  const int N = 20000;
  for (int i = 0; i < N; ++i) c[s.sample(l.data(), 4, {})]++;
  double z = 0;
  for (float x : l) z += std::exp(x);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(c[i] / double(N), std::exp(l[i]) / z, 0.015) << i;
}

TEST(Sampler, RepetitionPenaltyDemotesSeenTokens) {
  std::vector<float> l = {5.0f, 4.9f, 1.0f};
  SamplerOptions o;
  o.temperature = 0;
  o.repeat_penalty = 1.5f;
  Sampler s(o);
  EXPECT_EQ(s.sample(l.data(), 3, {0}), 1);
}

TEST(Sampler, RejectsBadOptions) {
  SamplerOptions o;
  o.top_p = 0;
  EXPECT_THROW(Sampler s(o), Error);
}
