// Property cache (paper §6.2.2): set-associative LRU with whole invalidation and tiled large properties.
#include "units/property_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "units/errors.h"

namespace netsparse::units {

void CacheConfig::validate() const {
  if (unbounded()) {
    if (segment_bytes <= 0 || max_line_bytes <= 0 || max_line_bytes % segment_bytes != 0)
      throw ConfigInvalid("property cache: segment and max line must be > 0, the line a whole number of segments");
    return;  // no sets: the ways and capacity do not apply
  }
  if (size_bytes <= 0)
    throw ConfigInvalid("property cache: size_bytes must be > 0 or " + std::to_string(kUnboundedCache) +
                        " (unbounded), got " + std::to_string(size_bytes));
  if (ways <= 0 || segment_bytes <= 0 || max_line_bytes <= 0)
    throw ConfigInvalid("property cache: ways, segment and max line must be > 0");
  if (max_line_bytes % segment_bytes != 0)
    throw ConfigInvalid("property cache: max line " + std::to_string(max_line_bytes) +
                        " B is not a whole number of " + std::to_string(segment_bytes) + " B segments");
  if (size_bytes < ways * max_line_bytes)
    throw ConfigInvalid("property cache: size " + std::to_string(size_bytes) +
                        " B is smaller than one set of " + std::to_string(ways) + " max-size lines");
}

PropertyCache::PropertyCache(const CacheConfig& cfg) : cfg_(cfg), present_(!cfg.no_data) {
  cfg_.validate();
  // Not zeroed: a line's bytes are read only after an insert wrote them, so untouched capacity costs
  // no page faults.
  if (!cfg_.no_data && !cfg_.unbounded()) data_.reset(new uint8_t[static_cast<size_t>(cfg_.size_bytes)]);
  // The widest line gives the fewest lines: a kernel's invalidate grows the line arrays to its own count
  // (one sized for 16 B lines held 4x the lines that 64 B properties use).
  invalidate(cfg_.max_line_bytes);
}

int64_t PropertyCache::bytes() const {
  const size_t per_line = sizeof(uint64_t) + (slot_ ? sizeof(uint32_t) : 0);
  const int64_t data = data_ ? cfg_.size_bytes : 0;
  return static_cast<int64_t>(lines_ * per_line) + data + present_.bytes() + static_cast<int64_t>(held_data_.capacity());
}

void PropertyCache::invalidate(int64_t prop_bytes) {
  if (prop_bytes <= 0) throw ConfigInvalid("property size must be > 0 bytes, got " + std::to_string(prop_bytes));
  prop_bytes_ = prop_bytes;
  n_chunks_ = (prop_bytes + cfg_.max_line_bytes - 1) / cfg_.max_line_bytes;
  const int64_t chunk = std::min(prop_bytes, cfg_.max_line_bytes);
  line_bytes_ = (chunk + cfg_.segment_bytes - 1) / cfg_.segment_bytes * cfg_.segment_bytes;
  hits = misses = inserts = evictions = 0;
  if (cfg_.unbounded()) {
    present_.clear();
    held_data_.clear();
    return;
  }
  n_sets_ = cfg_.size_bytes / line_bytes_ / cfg_.ways;
  const size_t lines = static_cast<size_t>(n_sets_ * cfg_.ways);
  if (lines_ < lines) {
    tag_.reset(new uint64_t[lines]);
    lines_ = lines;
    if (data_) {  // each set's positions start as its ways in order, and only ever trade places
      slot_.reset(new uint32_t[lines]);
      for (size_t l = 0; l < lines; ++l) slot_[l] = static_cast<uint32_t>(l % static_cast<size_t>(cfg_.ways));
    }
  }
  set_index_ = SetIndex<uint64_t>(static_cast<uint64_t>(n_sets_));
  std::fill(tag_.get(), tag_.get() + lines, kEmpty);  // the slots stay a permutation of each set's ways
}

PropertyCache::Line PropertyCache::line_of(uint64_t key) const {
  const uint64_t tag = set_index_.tag(key);
  if (tag == kEmpty)  // only key 2^64 - 1 in a cache of one set
    throw ConfigInvalid("property cache: key " + std::to_string(key) + " is its empty-way marker in a cache of " +
                        "one set; give the cache more sets: a larger size_bytes or fewer ways");
  return Line{static_cast<int64_t>(set_index_(key)), tag};
}

int64_t PropertyCache::find(const Line& l) const {
  const uint64_t* set = &tag_[l.set * cfg_.ways];
  for (int64_t w = 0; w < cfg_.ways; ++w)
    if (set[w] == l.tag) return w;
  return -1;
}

void PropertyCache::to_front(int64_t set, int64_t pos) {
  uint64_t* tags = &tag_[set * cfg_.ways];
  const uint64_t tag = tags[pos];
  std::memmove(tags + 1, tags, static_cast<size_t>(pos) * sizeof(uint64_t));
  tags[0] = tag;
  if (!slot_) return;
  uint32_t* slots = &slot_[set * cfg_.ways];
  const uint32_t slot = slots[pos];
  std::memmove(slots + 1, slots, static_cast<size_t>(pos) * sizeof(uint32_t));
  slots[0] = slot;
}

bool PropertyCache::contains(uint64_t idx) const {
  if (cfg_.unbounded()) return present_.find(idx) >= 0;
  for (int64_t c = 0; c < n_chunks_; ++c)
    if (find(line_of(idx * n_chunks_ + c)) < 0) return false;
  return true;
}

bool PropertyCache::lookup(uint64_t idx, uint8_t* out) {
  if (cfg_.unbounded()) {
    const int64_t at = present_.find(idx);
    if (at < 0) {
      ++misses;
      return false;
    }
    ++hits;
    if (out && !cfg_.no_data) std::memcpy(out, held_data_.data() + at * prop_bytes_, static_cast<size_t>(prop_bytes_));
    return true;
  }
  if (!contains(idx)) {
    ++misses;
    return false;
  }
  ++hits;
  for (int64_t c = 0; c < n_chunks_; ++c) {  // in chunk order: the last chunk ends most recent
    const Line l = line_of(idx * n_chunks_ + c);
    to_front(l.set, find(l));
    if (out && data_) {
      const int64_t off = c * cfg_.max_line_bytes;
      std::memcpy(out + off, front_data(l.set), std::min(line_bytes_, prop_bytes_ - off));
    }
  }
  return true;
}

bool PropertyCache::insert_unbounded(uint64_t idx, const uint8_t* data) {
  if (present_.find(idx) >= 0) return false;
  if (!cfg_.no_data) {
    const int64_t slot = present_.size();
    if (slot > UINT32_MAX)
      throw ConfigInvalid("unbounded property cache: over 2^32 properties with data; give it a size_bytes");
    held_data_.insert(held_data_.end(), data, data + prop_bytes_);
    present_.insert(idx, static_cast<uint32_t>(slot));
  } else {
    present_.insert(idx, 0);
  }
  inserts += n_chunks_;  // the lines a cache too large to evict would fill
  return true;
}

bool PropertyCache::insert(uint64_t idx, const uint8_t* data) {
  if (cfg_.unbounded()) return insert_unbounded(idx, data);
  if (contains(idx)) return false;
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const Line l = line_of(idx * n_chunks_ + c);
    const int64_t base = l.set * cfg_.ways;
    const int64_t pos = find(l);
    if (pos >= 0) {  // a chunk already present becomes the most recent, like a new one
      to_front(l.set, pos);
    } else {  // the last way: invalid if any is, else the least recently used
      if (tag_[base + cfg_.ways - 1] != kEmpty) ++evictions;
      to_front(l.set, cfg_.ways - 1);
      tag_[base] = l.tag;
      ++inserts;
    }
    if (!data_) continue;
    const int64_t off = c * cfg_.max_line_bytes;
    std::memcpy(front_data(l.set), data + off, std::min(line_bytes_, prop_bytes_ - off));
  }
  return true;
}

}  // namespace netsparse::units
