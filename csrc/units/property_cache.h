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
  // A hint: asks for the set state and first tags a lookup or insert of idx reads first.
  void prefetch(uint64_t idx) const {
    if (n_sets_ == 0) return;
    const uint64_t key = idx * static_cast<uint64_t>(n_chunks_);
    const int64_t set = set_of(key);
    __builtin_prefetch(&sets_[set]);
    __builtin_prefetch(&tag_[set * static_cast<uint64_t>(cfg_.ways)]);
  }

  int64_t hits = 0, misses = 0, inserts = 0, evictions = 0;

 private:
  // A set's valid lines this epoch. Ways fill lowest first and are only ever invalidated all at once,
  // so the valid ways of a set are always ways [0, filled): a lookup scans only those tags, and a
  // line's tag and stamp are never read before they are written (their arrays are not zeroed).
  struct SetState {
    uint32_t epoch = 0;  // of an older epoch: the set is empty, so a whole invalidate is O(1)
    uint32_t filled = 0;
  };
  int64_t set_of(uint64_t key) const { return static_cast<int64_t>(set_index_(key)); }
  int64_t find(uint64_t key, int64_t set) const;  // line or -1
  int64_t filled(int64_t set) const { return sets_[set].epoch == epoch_ ? sets_[set].filled : 0; }
  bool insert_unbounded(uint64_t idx, const uint8_t* data);
  CacheConfig cfg_;
  int64_t prop_bytes_ = 0, line_bytes_ = 0, n_chunks_ = 0, n_sets_ = 0;
  uint32_t epoch_ = 1;
  SetIndex<uint64_t> set_index_;  // of n_sets_ (bounded caches)
  uint64_t clock_ = 0;  // LRU stamp
  size_t lines_ = 0;    // lines held in tag_ and stamp_
  std::unique_ptr<uint64_t[]> tag_;
  std::unique_ptr<uint64_t[]> stamp_;
  std::vector<SetState> sets_;
  std::unique_ptr<uint8_t[]> data_;
  IdxSet present_;             // unbounded: the present idxs, each with its slot in held_data_
  std::vector<uint8_t> held_data_;
};

}  // namespace netsparse::units
