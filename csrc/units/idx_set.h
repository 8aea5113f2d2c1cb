#pragma once
// Open-addressing hash set of property idxs, the index of the unbounded property cache: one 8 B key
// a slot (plus a 4 B value when the cache keeps data), linear probing, doubled once half full. It
// costs what was inserted (16-32 B a key), where a set-associative cache as large as the matrix
// costs a tag, an epoch and an LRU stamp for every property the matrix has.
#include <cstdint>
#include <vector>

namespace netsparse::units {

class IdxSet {
 public:
  // `with_values`: each key carries a value (the unbounded cache's slot in its data arena).
  explicit IdxSet(bool with_values) : with_values_(with_values) {}

  // The value of `idx`, or -1 when absent.
  int64_t find(uint64_t idx) const;
  // Adds `idx` (which must be absent) with `value`.
  void insert(uint64_t idx, uint32_t value);
  // Empties the set; keeps its slots, since the next kernel reads about as many properties.
  void clear();
  int64_t size() const { return size_; }
  int64_t bytes() const;  // memory held by the slots

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  uint64_t home(uint64_t idx) const { return (idx * 0x9E3779B97F4A7C15ull) >> shift_; }  // Fibonacci hashing
  void grow();
  void place(uint64_t idx, uint32_t value);  // into the first free slot from its home
  bool with_values_;
  bool max_in_ = false;  // the all-ones idx, which marks empty slots, is kept apart
  uint32_t max_value_ = 0;
  int shift_ = 64;
  int64_t size_ = 0;
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
};

}  // namespace netsparse::units
