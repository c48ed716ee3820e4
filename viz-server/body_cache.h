// Re-encoded trace bodies (gzip of a .json, inflated .json.gz), computed once per file
// version and kept in a byte-bounded LRU so repeated fetches cost no CPU.
#pragma once
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cancel.h"

namespace minfer::viz {

using Body = std::shared_ptr<const std::string>;

class BodyCache {
 public:
  explicit BodyCache(size_t max_bytes = size_t(512) << 20) : max_bytes_(max_bytes) {}

  // The body stored under `key`, computing it with `make` on a miss. Concurrent callers of
  // the same key wait for one computation. Exceptions from `make` reach every waiter and
  // are not cached, except trace::Cancelled (the caller that computed it left): a waiter then
  // computes it itself. `cancel` (null: never) is the caller's own: set, it stops the wait with
  // trace::Cancelled (a `make` that is cancelled is given the flag by the caller).
  Body get(const std::string& key, const std::function<std::string()>& make,
           const trace::CancelFlag* cancel = nullptr);

  size_t bytes() const;

 private:
  struct Entry {
    std::shared_future<Body> body;
    size_t bytes = 0;  // 0 until computed
    std::list<std::string>::iterator lru;
  };
  Body compute(const std::string& key, const std::function<std::string()>& make, std::promise<Body>& promise);
  void evict_locked();

  size_t max_bytes_;
  mutable std::mutex mutex_;
  size_t total_ = 0;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // front = most recently used
};

}  // namespace minfer::viz
