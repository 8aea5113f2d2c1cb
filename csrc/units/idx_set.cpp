// Open-addressing idx set of the unbounded property cache.
#include "units/idx_set.h"

#include <algorithm>

namespace netsparse::units {

int64_t IdxSet::find(uint64_t idx) const {
  if (idx == kEmpty) return !max_in_ ? -1 : with_values_ ? static_cast<int64_t>(max_value_) : 0;
  if (keys_.empty()) return -1;
  const uint64_t mask = keys_.size() - 1;
  for (uint64_t s = home(idx);; s = (s + 1) & mask) {
    if (keys_[s] == idx) return with_values_ ? values_[s] : 0;
    if (keys_[s] == kEmpty) return -1;
  }
}

void IdxSet::insert(uint64_t idx, uint32_t value) {
  ++size_;
  if (idx == kEmpty) {
    max_in_ = true;
    max_value_ = value;
    return;
  }
  if (2 * size_ > static_cast<int64_t>(keys_.size())) grow();
  place(idx, value);
}

void IdxSet::place(uint64_t idx, uint32_t value) {
  const uint64_t mask = keys_.size() - 1;
  uint64_t s = home(idx);
  while (keys_[s] != kEmpty) s = (s + 1) & mask;
  keys_[s] = idx;
  if (with_values_) values_[s] = value;
}

void IdxSet::clear() {
  std::fill(keys_.begin(), keys_.end(), kEmpty);
  size_ = 0;
  max_in_ = false;
}

int64_t IdxSet::bytes() const {
  return static_cast<int64_t>(keys_.capacity() * sizeof(uint64_t) + values_.capacity() * sizeof(uint32_t));
}

void IdxSet::grow() {
  std::vector<uint64_t> keys(std::max<size_t>(16, 2 * keys_.size()), kEmpty);
  std::vector<uint32_t> values(with_values_ ? keys.size() : 0);
  keys_.swap(keys);
  values_.swap(values);
  shift_ = 64 - __builtin_ctzll(keys_.size());
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] != kEmpty) place(keys[i], with_values_ ? values[i] : 0);
}

}  // namespace netsparse::units
