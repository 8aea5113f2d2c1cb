"""Reference RIG client unit (paper §5.1-5.3): filtering and coalescing, to check the C++ unit.

Per idx in order: local -> dropped; filter bit set -> copied from the slot where the property first
landed; in the Pending PR Table -> waiter; table full -> stall; else a read PR (dest, idx, id).
Entry ids come from a LIFO free list that starts as 0, 1, 2, ... A command completes when its idxs
are processed and the table is empty; only then does the next command start.
"""

import bisect


class RigClientRef:
    def __init__(self, node, bounds, capacity=256, filter_=True, coalesce=True):
        self.node, self.bounds, self.cap = node, list(bounds), capacity
        self.filter_on, self.coalesce_on = filter_, coalesce
        self.lo, self.hi = bounds[node], bounds[node + 1]
        self.c = dict.fromkeys(("idxs", "local", "filtered", "coalesced", "prs", "responses", "stalls",
                                "commands"), 0)

    def begin_kernel(self, prop_bytes, n_slots):
        self.pb = prop_bytes
        self.halo = bytearray(prop_bytes * n_slots)
        self.filter = {}  # idx -> slot where it landed
        self.cmds, self.cmd, self.pos = [], 0, 0
        self.free = list(range(self.cap - 1, -1, -1))
        self.entries = {}  # id -> [idx, [slots...]]
        self.by_idx = {}
        self.stalled = False

    def enqueue(self, idxs, slots):
        self.cmds.append((list(idxs), list(slots)))

    def owner(self, idx):
        return bisect.bisect_right(self.bounds, idx) - 1

    def _copy(self, dst, src):
        self.halo[dst * self.pb : (dst + 1) * self.pb] = self.halo[src * self.pb : (src + 1) * self.pb]

    def issue(self):
        out = []
        self.stalled = False
        while self.cmd < len(self.cmds):
            idxs, slots = self.cmds[self.cmd]
            while self.pos < len(idxs):
                idx, slot = idxs[self.pos], slots[self.pos]
                if self.lo <= idx < self.hi:
                    self.c["local"] += 1
                elif self.filter_on and idx in self.filter:
                    self._copy(slot, self.filter[idx])
                    self.c["filtered"] += 1
                elif self.coalesce_on and idx in self.by_idx:
                    self.entries[self.by_idx[idx]][1].append(slot)
                    self.c["coalesced"] += 1
                elif not self.free:
                    self.stalled = True
                    self.c["stalls"] += 1
                    return out
                else:
                    e = self.free.pop()
                    self.entries[e] = [idx, [slot]]
                    if self.coalesce_on:
                        self.by_idx[idx] = e
                    self.c["prs"] += 1
                    out.append((self.owner(idx), idx, e))
                self.c["idxs"] += 1
                self.pos += 1
            if self.entries:
                return out
            self.cmd, self.pos = self.cmd + 1, 0
            self.c["commands"] += 1
        return out

    def respond(self, idx, id_, payload):
        idx0, slots = self.entries.pop(id_)
        assert idx0 == idx
        for s in slots:
            self.halo[s * self.pb : (s + 1) * self.pb] = payload
        self.filter[idx] = slots[0]
        self.by_idx.pop(idx, None)
        self.free.append(id_)
        self.c["responses"] += 1

    @property
    def pending(self):
        return len(self.entries)
