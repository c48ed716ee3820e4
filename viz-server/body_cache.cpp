#include "body_cache.h"

namespace minfer::viz {

Body BodyCache::get(const std::string& key, const std::function<std::string()>& make,
                    const trace::CancelFlag* cancel) {
  for (;;) {
    std::promise<Body> promise;
    std::shared_future<Body> future;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        future = it->second.body;
      } else {
        lru_.push_front(key);
        entries_[key] = Entry{promise.get_future().share(), 0, lru_.begin()};
      }
    }
    if (!future.valid()) return compute(key, make, promise);
    if (cancel) {
      while (future.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
        trace::stop_if_cancelled(cancel);
    }
    try {
      return future.get();
    } catch (const trace::Cancelled&) {
      trace::stop_if_cancelled(cancel);
      // The caller that computed it is gone and so is its entry: this caller still waits.
    }
  }
}

Body BodyCache::compute(const std::string& key, const std::function<std::string()>& make,
                        std::promise<Body>& promise) {
  try {
    std::string made = make();
    made.shrink_to_fit();  // the budget counts size(); a gzip buffer sized for the worst case is 4x that
    Body body = std::make_shared<const std::string>(std::move(made));
    promise.set_value(body);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      it->second.bytes = body->size();
      total_ += body->size();
      evict_locked();
    }
    return body;
  } catch (...) {
    {
      // Gone before the waiters hear of it, so a waiter that starts over does not find it.
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        lru_.erase(it->second.lru);
        entries_.erase(it);
      }
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

void BodyCache::evict_locked() {
  // Oldest first; an entry still being computed (bytes == 0) is skipped, and the newest one
  // stays even when it alone exceeds the budget (it is being served right now anyway).
  auto it = lru_.end();
  while (total_ > max_bytes_ && it != lru_.begin()) {
    --it;
    if (it == lru_.begin()) break;
    auto entry = entries_.find(*it);
    if (entry->second.bytes == 0) continue;
    total_ -= entry->second.bytes;
    entries_.erase(entry);
    it = lru_.erase(it);
  }
}

size_t BodyCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

}  // namespace minfer::viz
