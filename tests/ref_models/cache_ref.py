"""Reference LRU property cache (paper §6.2.2) to check the C++ unit: one OrderedDict per set.

Line = property rounded up to 16 B segments, at most 512 B; bigger properties are tiled into chunks
with keys idx * n_chunks + c; set = key mod n_sets. A lookup hits when every chunk is present.
Insert leaves a present property unchanged.
"""

from collections import OrderedDict


class CacheRef:
    def __init__(self, prop_bytes, capacity=32 << 20, ways=16, segment=16, max_line=512):
        self.prop, self.ways, self.max_line = prop_bytes, ways, max_line
        self.chunks = -(-prop_bytes // max_line)
        chunk = min(prop_bytes, max_line)
        self.line = -(-chunk // segment) * segment
        self.n_sets = capacity // self.line // ways
        self.sets = [OrderedDict() for _ in range(self.n_sets)]
        self.hits = self.misses = self.inserts = self.evictions = 0

    def _keys(self, idx):
        return [idx * self.chunks + c for c in range(self.chunks)]

    def contains(self, idx):
        return all(k in self.sets[k % self.n_sets] for k in self._keys(idx))

    def lookup(self, idx):
        if not self.contains(idx):
            self.misses += 1
            return None
        self.hits += 1
        parts = []
        for k in self._keys(idx):
            s = self.sets[k % self.n_sets]
            s.move_to_end(k)
            parts.append(s[k])
        return b"".join(parts)

    def insert(self, idx, data):
        if self.contains(idx):
            return False
        for c, k in enumerate(self._keys(idx)):
            s = self.sets[k % self.n_sets]
            chunk = data[c * self.max_line : (c + 1) * self.max_line]
            if k in s:
                s.move_to_end(k)
            else:
                if len(s) == self.ways:
                    s.popitem(last=False)
                    self.evictions += 1
                self.inserts += 1
            s[k] = chunk
        return True


class UnboundedCacheRef:
    """Reference unbounded property cache: a dict from idx to bytes that never evicts. ``inserts``
    counts lines, as a set-associative cache too large to evict fills them: one per chunk."""

    def __init__(self, prop_bytes, max_line=512):
        self.chunks = -(-prop_bytes // max_line)
        self.held = {}
        self.hits = self.misses = self.inserts = 0

    def lookup(self, idx):
        if idx not in self.held:
            self.misses += 1
            return None
        self.hits += 1
        return self.held[idx]

    def insert(self, idx, data):
        if idx in self.held:
            return False
        self.held[idx] = data
        self.inserts += self.chunks
        return True
