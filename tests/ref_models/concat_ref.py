"""Reference concatenator (paper §6.1.2, virtualised queues §7.2) to check the C++ unit.

Same rules as csrc/units/concatenator.h, written plainly: one queue per (type, dest); a queue opened
at time t expires at t + delay (never when delay is None); before a push, expired queues flush in
FIFO order; after the push the queue flushes when full (MTU) or already expired. Virtualised: a PR
needs ceil(bytes / phys_bytes) physical queues for its queue; when the pool runs dry the oldest open
queue flushes (reason 3). Reasons: 0 full, 1 expired, 2 flush_all, 3 pool.
"""

from collections import deque

from ref_models.wire_ref import encode

INF = float("inf")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class ConcatRef:
    def __init__(self, n_dests, mtu=1500, upper=50, delay=500, virtual=False, phys_bytes=256, phys_queues=64,
                 len_=0):
        self.n, self.room = n_dests, mtu - upper - 14
        self.delay, self.virtual, self.pb, self.pq = delay, virtual, phys_bytes, phys_queues
        self.len = len_
        self.q = {k: {"prs": [], "gen": 0, "exp": 0, "phys": 0} for k in range(2 * n_dests)}
        self.fifo = deque()
        self.packets = []  # (dest, type, n_prs, time, reason, bytes)
        self.pool = 0

    def pr_bytes(self, type_):
        return 18 + (self.len if type_ == 1 else 0)

    def push(self, type_, dest, pr, now):
        if self.fifo and self.fifo[0][2] <= now:
            self.advance(now)
        k = type_ * self.n + dest
        qu = self.q[k]
        if self.virtual:
            self._reserve(k, self.pr_bytes(type_), now)
        if not qu["prs"]:
            qu["exp"] = INF if self.delay is None else now + self.delay
            self.fifo.append((k, qu["gen"], qu["exp"]))
        qu["prs"].append(pr)
        if len(qu["prs"]) == self.room // self.pr_bytes(type_):
            self._flush(k, now, 0)
        elif self.delay is not None and now >= qu["exp"]:
            self._flush(k, now, 1)

    def _live(self, k, gen):
        return self.q[k]["gen"] == gen and self.q[k]["prs"]

    def advance(self, now):
        while self.fifo:
            k, gen, exp = self.fifo[0]
            live = self._live(k, gen)
            if live and exp > now:
                break
            self.fifo.popleft()
            if live:
                self._flush(k, now, 1)

    def flush_all(self, now):
        while self.fifo:
            k, gen, _ = self.fifo.popleft()
            if self._live(k, gen):
                self._flush(k, now, 2)

    def _reserve(self, k, size, now):
        qu = self.q[k]
        data = sum(self.pr_bytes(k // self.n) for _ in qu["prs"])
        extra = _ceil(data + size, self.pb) - qu["phys"]
        while self.pool + extra > self.pq:
            kk, gen, _ = self.fifo.popleft()
            if not self._live(kk, gen):
                continue
            self._flush(kk, now, 3)
            if kk == k:
                extra = _ceil(size, self.pb)
        qu["phys"] += extra
        self.pool += extra

    def _flush(self, k, now, reason):
        qu = self.q[k]
        type_, dest = divmod(k, self.n)
        data = encode(type_, dest, self.len, qu["prs"])
        self.packets.append((dest, type_, len(qu["prs"]), now, reason, data))
        self.pool -= qu["phys"]
        qu["phys"], qu["prs"] = 0, []
        qu["gen"] += 1
