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
  // no page faults (the simulator builds 8 caches per ToR).
  if (!cfg_.no_data && !cfg_.unbounded()) data_.reset(new uint8_t[static_cast<size_t>(cfg_.size_bytes)]);
  // The widest line gives the fewest lines: a kernel's invalidate grows the line arrays to its own count
  // (one sized for 16 B lines held 4x the lines that 64 B properties use: 2.5 GiB over 64 pipes of 32 MB).
  invalidate(cfg_.max_line_bytes);
}

int64_t PropertyCache::bytes() const {
  const int64_t lines = static_cast<int64_t>(lines_ * sizeof(uint64_t) * 2 + sets_.capacity() * sizeof(SetState));
  const int64_t data = data_ ? cfg_.size_bytes : 0;
  return lines + data + present_.bytes() + static_cast<int64_t>(held_data_.capacity());
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
    stamp_.reset(new uint64_t[lines]);
    lines_ = lines;
  }
  if (sets_.size() < static_cast<size_t>(n_sets_)) sets_.resize(static_cast<size_t>(n_sets_));
  set_index_ = SetIndex<uint64_t>(static_cast<uint64_t>(n_sets_));
  if (++epoch_ == 0) {  // wrapped: really clear
    std::fill(sets_.begin(), sets_.end(), SetState{});
    epoch_ = 1;
  }
}

int64_t PropertyCache::find(uint64_t key, int64_t set) const {
  const int64_t base = set * cfg_.ways, n = filled(set);
  for (int64_t w = 0; w < n; ++w)
    if (tag_[base + w] == key) return base + w;
  return -1;
}

bool PropertyCache::contains(uint64_t idx) const {
  if (cfg_.unbounded()) return present_.find(idx) >= 0;
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const uint64_t key = idx * n_chunks_ + c;
    if (find(key, set_of(key)) < 0) return false;
  }
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
  int64_t lines[64];
  const bool small = n_chunks_ <= 64;
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const uint64_t key = idx * n_chunks_ + c;
    const int64_t l = find(key, set_of(key));
    if (l < 0) {
      ++misses;
      return false;
    }
    if (small) lines[c] = l;
  }
  ++hits;
  for (int64_t c = 0; c < n_chunks_; ++c) {
    const uint64_t key = idx * n_chunks_ + c;
    const int64_t l = small ? lines[c] : find(key, set_of(key));
    stamp_[l] = ++clock_;
    if (out && data_) {
      const int64_t off = c * cfg_.max_line_bytes;
      std::memcpy(out + off, data_.get() + l * line_bytes_, std::min(line_bytes_, prop_bytes_ - off));
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
    const uint64_t key = idx * n_chunks_ + c;
    const int64_t set = set_of(key);
    int64_t l = find(key, set);
    if (l < 0) {  // invalid way first (lowest), else the least recently used
      const int64_t base = set * cfg_.ways;
      SetState& st = sets_[set];
      if (st.epoch != epoch_) st = SetState{epoch_, 0};
      int64_t victim;
      if (st.filled < cfg_.ways) {
        victim = base + st.filled++;
      } else {
        victim = base;
        for (int64_t w = 1; w < cfg_.ways; ++w)
          if (stamp_[base + w] < stamp_[victim]) victim = base + w;
        ++evictions;
      }
      l = victim;
      tag_[l] = key;
      ++inserts;
    }
    stamp_[l] = ++clock_;
    if (!data_) continue;
    const int64_t off = c * cfg_.max_line_bytes;
    std::memcpy(data_.get() + l * line_bytes_, data + off, std::min(line_bytes_, prop_bytes_ - off));
  }
  return true;
}

}  // namespace netsparse::units
