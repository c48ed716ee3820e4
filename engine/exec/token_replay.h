// Token replay (teacher forcing, GenerateOptions::forced): the token fed after each pick is the
// forced one, and generation stops when they run out. Without forced tokens, the pick is fed.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "exec/generate.h"

namespace minfer {

class TokenReplay {
 public:
  TokenReplay(const std::optional<std::vector<int32_t>>& forced, GenerateResult& r) : forced_(forced), r_(r) {}
  bool replays() const { return forced_.has_value(); }
  // The token fed after `picked`: the forced one when teacher-forced.
  int32_t fed(int32_t picked) const { return forced_ ? (*forced_)[r_.generated.size()] : picked; }
  // Whether a forced token is left for the next step (always without forced tokens); notes in
  // the result when they ran out.
  bool left() {
    const bool left = !forced_ || r_.generated.size() < forced_->size();
    if (!left) r_.forced_ran_out = true;
    return left;
  }

 private:
  const std::optional<std::vector<int32_t>>& forced_;
  GenerateResult& r_;
};

}  // namespace minfer
