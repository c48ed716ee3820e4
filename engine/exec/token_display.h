// Tokens read but not shown yet, oldest first. A token is shown (on_token) only once its step is
// safe with the observer (a trace: on disk). show_due shows them all when every step handed to
// the observer is safe: at once if it already is (Observer::caught_up), else it waits (flush)
// only when told to or when more than kMaxUnshown are behind; otherwise they wait for the next
// call. The generation loop calls it where every unshown token's step has been handed over.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "exec/observer.h"

namespace minfer {

class TokenDisplay {
 public:
  TokenDisplay(Observer* obs, const std::function<void(int32_t)>& on_token) : obs_(obs), on_token_(on_token) {}
  void push(int32_t token) { unshown_.push_back(token); }
  void show_due(bool wait) {
    if (unshown_.empty()) return;
    if (obs_) {
      if (wait || unshown_.size() > kMaxUnshown) obs_->flush();
      else if (!obs_->caught_up()) return;
    }
    if (on_token_)
      for (int32_t t : unshown_) on_token_(t);
    unshown_.clear();
  }

 private:
  static constexpr size_t kMaxUnshown = 2;
  Observer* obs_;
  const std::function<void(int32_t)>& on_token_;
  std::vector<int32_t> unshown_;
};

}  // namespace minfer
