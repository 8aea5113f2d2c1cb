#pragma once
// Property cache of the switch (paper §6.2.2): set-associative, LRU, invalidated as a whole before
// each kernel.
//
// Parameters (paper Table 5, §6.2.2; HardwareParams.property_cache): capacity, ways, segment size and the
// largest line (32 MB, 16 ways, 16 B, 512 B). A line holds one property rounded up to whole segments. A
// property larger than the maximum line is tiled into ceil(bytes / max line) chunks, each its own line with key idx * n_chunks + chunk (consecutive
// chunks land in consecutive sets). Set of a key = key mod n_sets (our assumption: low-order index
// bits). A property lookup hits only when all its chunks are present; counters count property
// lookups (hits, misses) and lines (inserts, evictions).
//
// Unbounded (size_bytes = kUnboundedCache, `property_cache.size_bytes=inf`): never evicts, so a
// property is present from its insert to the next invalidate, and hits, misses and inserts equal
// those of a set-associative cache too large to evict. Its memory follows what was inserted: an
// IdxSet of the present idxs, and their bytes only when the cache keeps data.
#include <cstdint>
#include <memory>
#include <vector>

#include "units/idx_set.h"
#include "units/set_index.h"

namespace netsparse::units {

inline constexpr int64_t kUnboundedCache = -1;  // CacheConfig::size_bytes of the unbounded cache

// No value lives here: set by the binding / the simulator from HardwareParams; zero until then.
struct CacheConfig {
  int64_t size_bytes{};  // or kUnboundedCache
  int64_t ways{};
  int64_t segment_bytes{};
  int64_t max_line_bytes{};
  // Set where nobody reads a hit's payload (the simulator's properties are zeros): lookups then
  // leave `out` as it is, and inserts store no bytes.
  bool no_data{};
  bool unbounded() const;
  void validate() const;
};

inline bool CacheConfig::unbounded() const { return size_bytes == kUnboundedCache; }

class PropertyCache {
 public:
  explicit PropertyCache(const CacheConfig& cfg);

  // Invalidates every line and sets the property size of the next kernel.
  void invalidate(int64_t prop_bytes);
  int64_t prop_bytes() const { return prop_bytes_; }
  int64_t line_bytes() const { return line_bytes_; }
  int64_t n_chunks() const { return n_chunks_; }
  int64_t n_sets() const { return n_sets_; }  // 0 when unbounded
  bool unbounded() const { return cfg_.unbounded(); }
  int64_t held() const { return present_.size(); }  // properties in an unbounded cache
  int64_t bytes() const;  // memory held for lines, tags and data

  // Copies the property into `out` (may be null) and returns true on a hit; updates LRU.
  bool lookup(uint64_t idx, uint8_t* out);
  // Inserts the property if absent (LRU victim when the set is full) and returns true if inserted.
  // A property already present is left unchanged (no LRU update).
  bool insert(uint64_t idx, const uint8_t* data);
  bool contains(uint64_t idx) const;
  // A hint: asks for the tags a lookup or insert of idx reads first.
  void prefetch(uint64_t idx) const {
    if (n_sets_ == 0) return;
    __builtin_prefetch(&tag_[set_index_(idx * static_cast<uint64_t>(n_chunks_)) * static_cast<uint64_t>(cfg_.ways)]);
  }

  int64_t hits = 0, misses = 0, inserts = 0, evictions = 0;

 private:
  // A set is its ways' tags (key / n_sets) most recent first, kEmpty where a way holds no line, so the
  // valid ways are a prefix and the least recently used one is last: the whole LRU state of a set of 16
  // ways is one aligned 128 B pair of lines, and a lookup or insert touches no other (no stamps, no fill
  // count). With data, slot_ gives each position's data slot and moves along with its tag.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Line {  // where a key lives: its set and its tag there
    int64_t set;
    uint64_t tag;
  };
  Line line_of(uint64_t key) const;
  int64_t find(const Line& l) const;  // its position in its set, or -1
  void to_front(int64_t set, int64_t pos);  // the line at pos becomes the set's most recent
  uint8_t* front_data(int64_t set) const {  // the bytes of the set's most recent line (with data)
    const int64_t base = set * cfg_.ways;
    return data_.get() + (base + slot_[base]) * line_bytes_;
  }
  bool insert_unbounded(uint64_t idx, const uint8_t* data);
  CacheConfig cfg_;
  int64_t prop_bytes_ = 0, line_bytes_ = 0, n_chunks_ = 0, n_sets_ = 0;
  SetIndex<uint64_t> set_index_;  // of n_sets_ (bounded caches)
  size_t lines_ = 0;              // lines held in tag_ (and slot_)
  std::unique_ptr<uint64_t[]> tag_;
  std::unique_ptr<uint32_t[]> slot_;  // with data only
  std::unique_ptr<uint8_t[]> data_;
  IdxSet present_;             // unbounded: the present idxs, each with its slot in held_data_
  std::vector<uint8_t> held_data_;
};

}  // namespace netsparse::units
