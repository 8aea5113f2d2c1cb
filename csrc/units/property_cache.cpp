// Property cache (paper §6.2.2): set-associative LRU with whole invalidation and tiled large properties.
#include "units/property_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace netsparse::units {

void CacheConfig::validate() const {
  if (ways <= 0 || segment_bytes <= 0 || max_line_bytes <= 0 || capacity_bytes <= 0)
    throw std::invalid_argument("property cache: capacity, ways, segment and max line must be > 0");
  if (max_line_bytes % segment_bytes != 0)
    throw std::invalid_argument("property cache: max line " + std::to_string(max_line_bytes) +
                                " B is not a whole number of " + std::to_string(segment_bytes) + " B segments");
  if (capacity_bytes < ways * max_line_bytes)
    throw std::invalid_argument("property cache: capacity " + std::to_string(capacity_bytes) +
                                " B is smaller than one set of " + std::to_string(ways) + " max-size lines");
}

PropertyCache::PropertyCache(const CacheConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  // Not zeroed: a line's bytes are read only after an insert wrote them, so untouched capacity costs
  // no page faults (the simulator builds 8 caches per ToR).
  data_.reset(new uint8_t[static_cast<size_t>(cfg_.capacity_bytes)]);
  invalidate(cfg_.segment_bytes);
}

void PropertyCache::invalidate(int64_t prop_bytes) {
  if (prop_bytes <= 0) throw std::invalid_argument("property size must be > 0 bytes, got " + std::to_string(prop_bytes));
  prop_bytes_ = prop_bytes;
  n_chunks_ = (prop_bytes + cfg_.max_line_bytes - 1) / cfg_.max_line_bytes;
  const int64_t chunk = std::min(prop_bytes, cfg_.max_line_bytes);
  line_bytes_ = (chunk + cfg_.segment_bytes - 1) / cfg_.segment_bytes * cfg_.segment_bytes;
  n_sets_ = cfg_.capacity_bytes / line_bytes_ / cfg_.ways;
  const size_t lines = static_cast<size_t>(n_sets_ * cfg_.ways);
  if (tag_.size() < lines) {
    tag_.resize(lines);
    line_epoch_.assign(lines, 0);
    stamp_.resize(lines);
  }
  if (++epoch_ == 0) {  // wrapped: really clear
    std::fill(line_epoch_.begin(), line_epoch_.end(), 0);
    epoch_ = 1;
  }
  hits = misses = inserts = evictions = 0;
}

int64_t PropertyCache::find(uint64_t key, int64_t set) const {
  const int64_t base = set * cfg_.ways;
  for (int64_t w = 0; w < cfg_.ways; ++w)  // tag first: a miss then never loads the epoch line
    if (tag_[base + w] == key && line_epoch_[base + w] == epoch_) return base + w;
  return -1;
}

bool PropertyCache::contains(uint64_t idx) const {
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const uint64_t key = idx * n_chunks_ + c;
    if (find(key, static_cast<int64_t>(key % n_sets_)) < 0) return false;
  }
  return true;
}

bool PropertyCache::lookup(uint64_t idx, uint8_t* out) {
  int64_t lines[64];
  const bool small = n_chunks_ <= 64;
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const uint64_t key = idx * n_chunks_ + c;
    const int64_t l = find(key, static_cast<int64_t>(key % n_sets_));
    if (l < 0) {
      ++misses;
      return false;
    }
    if (small) lines[c] = l;
  }
  ++hits;
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const uint64_t key = idx * n_chunks_ + c;
    const int64_t l = small ? lines[c] : find(key, static_cast<int64_t>(key % n_sets_));
    stamp_[l] = ++clock_;
    if (out) {
      const int64_t off = c * cfg_.max_line_bytes;
      std::memcpy(out + off, data_.get() + l * line_bytes_, std::min(line_bytes_, prop_bytes_ - off));
    }
  }
  return true;
}

bool PropertyCache::insert(uint64_t idx, const uint8_t* data) {
  if (contains(idx)) return false;
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const uint64_t key = idx * n_chunks_ + c;
    const int64_t set = static_cast<int64_t>(key % n_sets_);
    int64_t l = find(key, set);
    if (l < 0) {  // invalid way first (lowest), else the least recently used
      const int64_t base = set * cfg_.ways;
      int64_t victim = -1;
      for (int64_t w = 0; w < cfg_.ways && victim < 0; ++w)
        if (line_epoch_[base + w] != epoch_) victim = base + w;
      if (victim < 0) {
        victim = base;
        for (int64_t w = 1; w < cfg_.ways; ++w)
          if (stamp_[base + w] < stamp_[victim]) victim = base + w;
        ++evictions;
      }
      l = victim;
      tag_[l] = key;
      line_epoch_[l] = epoch_;
      ++inserts;
    }
    stamp_[l] = ++clock_;
    const int64_t off = c * cfg_.max_line_bytes;
    std::memcpy(data_.get() + l * line_bytes_, data + off, std::min(line_bytes_, prop_bytes_ - off));
  }
  return true;
}

}  // namespace netsparse::units
