#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "core/error.h"

namespace minfer {

Sampler::Sampler(const SamplerOptions& o) : opt_(o), rng_(o.seed) {
  if (!(o.temperature >= 0)) fail("--temp must be >= 0 (got ", o.temperature, ")");
  if (o.top_k < 0) fail("--top-k must be >= 0 (got ", o.top_k, ")");
  if (!(o.top_p > 0 && o.top_p <= 1)) fail("--top-p must be in (0, 1] (got ", o.top_p, ")");
  if (!(o.repeat_penalty > 0)) fail("--repeat-penalty must be > 0 (got ", o.repeat_penalty, ")");
}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::sample(const float* logits, int64_t n, const std::vector<int32_t>& history) {
  return pick(penalized(logits, n, history));
}

std::vector<float> Sampler::penalized(const float* logits, int64_t n, const std::vector<int32_t>& history) const {
  std::vector<float> l(logits, logits + n);
  if (opt_.repeat_penalty != 1.0f) {
    std::unordered_set<int32_t> seen;
    const size_t from = history.size() > static_cast<size_t>(opt_.repeat_last_n)
                            ? history.size() - static_cast<size_t>(opt_.repeat_last_n) : 0;
    for (size_t i = from; i < history.size(); ++i) seen.insert(history[i]);
    for (int32_t t : seen)
      if (t >= 0 && t < n) {
        float& v = l[static_cast<size_t>(t)];
        v = v > 0 ? v / opt_.repeat_penalty : v * opt_.repeat_penalty;
      }
  }
  return l;
}

int32_t Sampler::pick(const std::vector<float>& l) {
  const int64_t n = static_cast<int64_t>(l.size());
  if (n == 0) fail("sampler: no logits to pick from");
  if (opt_.temperature == 0.0f)  // greedy; ties go to the lowest id
    return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());

  std::vector<int32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    return l[static_cast<size_t>(a)] > l[static_cast<size_t>(b)] || (l[static_cast<size_t>(a)] == l[static_cast<size_t>(b)] && a < b);
  };
  size_t k = opt_.top_k > 0 ? std::min<size_t>(static_cast<size_t>(opt_.top_k), idx.size()) : idx.size();
  std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(k), idx.end(), by_logit);
  idx.resize(k);
  std::vector<double> p(k);
  const double mx = l[static_cast<size_t>(idx[0])];
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += p[i] = std::exp((l[static_cast<size_t>(idx[i])] - mx) / opt_.temperature);
  size_t keep = k;
  double cum = 0;
  for (size_t i = 0; i < k; ++i) {
    cum += p[i] / sum;
    if (cum >= opt_.top_p) {
      keep = i + 1;
      break;
    }
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += p[i];
  double r = uniform() * total;
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0) return idx[i];
  }
  return idx[keep - 1];
}

}  // namespace minfer
