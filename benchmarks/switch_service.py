"""Switch service: PRs/s through one gRPC ToR on loopback, plus latency percentiles.

    python benchmarks/switch_service.py [--clients 4] [--seconds 5] [--prop-bytes 64] [--frame-packets 32]

The ToR runs in its own process (``python -m netsparse_torch.cli.switch --role tor``) so it does not share
a GIL with the load generators. Each client sends frames of ``--frame-packets`` MTU-full read packets
(concatenated: 79 read PRs per 1450 B packet) and keeps ``--window`` frames in flight. Two modes:

- ``hit``: the ToR cache is warmed with every row first, so the C++ SwitchPipe turns every read into a
  response inside the rack (deconcatenate, cache lookup, concatenate responses): PRs in = PRs answered.
- ``forward``: the rows belong to a sink node that the reads go to (cache misses, concatenated per
  destination again); the sink only counts them.

Latency: a probe client sends one single-PR read packet at a time and waits for its answer, while the
load runs ("loaded") and alone ("idle"); percentiles over the probes. Writes
benchmarks/results/switch_service.json. Reference point: about 80k packets/s for the bmv2 software
switch (P4's reference software switch); our target >= 1 M PRs/s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_result  # noqa: E402

from hw_models import (
    unit_args,  # noqa: E402
    units,  # noqa: E402
)
from hw_models.unit_args import binding as native_units  # noqa: E402
from netsparse_torch.switch_service import ControlClient, SwitchClient, configure_request  # noqa: E402

N_ROWS = 4096
WIRE = unit_args.wire()  # NetSparse Table 5 packet sizes (MTU, upper-layer header)
BMV2_PACKETS_PER_S = 80_000  # the bmv2 software switch forwards about 80k packets/s


def start_tor() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "netsparse_torch.cli.switch", "--role", "tor", "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"switch did not start: {line!r}")
    return proc, line.split()[-1]


def read_frames(src: int, dest: int, prop: int, n_packets: int, rng) -> bytes:
    k = units.max_prs_per_packet(WIRE["mtu"], WIRE["upper_bytes"], units.READ, prop)
    return b"".join(units.encode_packet(units.READ, dest, prop, np.full(k, src), np.zeros(k, np.int64),
                                        rng.integers(0, N_ROWS, k), np.arange(k), **WIRE) for _ in range(n_packets))


def warm(addr: str, owner: int, prop: int) -> None:
    """Fills the ToR cache: response packets from ``owner`` for every row (to node 0, who drains them)."""
    k = units.max_prs_per_packet(WIRE["mtu"], WIRE["upper_bytes"], units.RESPONSE, prop)
    sink, src = SwitchClient(addr, 0), SwitchClient(addr, owner)
    rows = np.random.default_rng(0).integers(0, 256, (N_ROWS, prop), dtype=np.uint8)
    try:
        n = 0
        for s in range(0, N_ROWS, k):
            e = min(s + k, N_ROWS)
            src.send(units.encode_packet(units.RESPONSE, 0, prop, np.zeros(e - s, np.int64), np.zeros(e - s, np.int64),
                                         np.arange(s, e), np.arange(s, e), payload=rows[s:e], **WIRE))
        while n < N_ROWS:
            n += native_units.scan_frame(sink.recv(10), n_dests=owner + 1, prop_bytes=prop, **WIRE)[2]
    finally:
        sink.close()
        src.close()


def load(addr: str, node: int, dest: int, prop: int, n_nodes: int, args, stop: threading.Event,
         closed_loop: bool) -> None:
    """Sends frames of concatenated reads. Closed loop (hit mode): at most ``window`` frames without
    their responses; open loop (forward mode): as fast as the switch's backpressure lets them in."""
    client = SwitchClient(addr, node)
    frame = read_frames(node, dest, prop, args.frame_packets, np.random.default_rng(node))
    per_frame = native_units.scan_frame(frame, n_dests=n_nodes, prop_bytes=prop, **WIRE)[1]
    sent = got = 0
    try:
        while not stop.is_set():
            while (not closed_loop or sent - got < args.window * per_frame) and not stop.is_set():
                client.send(frame)
                sent += per_frame
            data = client.poll(0.05)
            if data is not None:
                got += native_units.scan_frame(data, n_dests=n_nodes, prop_bytes=prop, **WIRE)[2]
    finally:
        client.close()


def drain(client: SwitchClient, stop: threading.Event) -> None:
    while not stop.is_set():
        client.poll(0.05)


def probe(c: SwitchClient, node: int, dest: int, prop: int, n: int) -> list[float]:
    """Round trips of one single-PR read (answered by the ToR cache) at a time."""
    pkt = units.encode_packet(units.READ, dest, prop, np.array([node]), np.array([0]), np.array([1]), np.array([0]),
                              **WIRE)
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        c.send(pkt)
        c.recv(10)
        lat.append(time.perf_counter() - t)
        time.sleep(0.002)
    return lat


def pct(xs: list[float]) -> dict:
    a = np.asarray(xs) * 1e6
    return {f"p{q}": float(np.percentile(a, q)) for q in (50, 90, 99)} | {"n": len(xs)}


def run_mode(mode: str, args) -> dict:
    proc, addr = start_tor()
    try:
        probe_node, owner = args.clients, args.clients + 1
        n_nodes = args.clients + 2
        ctl = ControlClient(addr)
        ctl.configure(configure_request(n_nodes, args.prop_bytes, {0: list(range(n_nodes))}, cache=mode == "hit"))
        stop = threading.Event()
        threads = []
        if mode == "hit":
            warm(addr, owner, args.prop_bytes)
        else:  # the owner is a sink that drains the forwarded reads
            sink = SwitchClient(addr, owner)
            threads.append(threading.Thread(target=drain, args=(sink, stop)))
        prober = SwitchClient(addr, probe_node)
        idle = probe(prober, probe_node, owner, args.prop_bytes, args.probes) if mode == "hit" else []
        before = ctl.counters()
        threads += [threading.Thread(target=load, args=(addr, i, owner, args.prop_bytes, n_nodes, args, stop,
                                                        mode == "hit")) for i in range(args.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        loaded = probe(prober, probe_node, owner, args.prop_bytes, args.probes) if mode == "hit" else []
        time.sleep(max(0.0, args.seconds - (time.perf_counter() - t0)))
        after = ctl.counters()
        elapsed = time.perf_counter() - t0
        stop.set()
        for t in threads:
            t.join(timeout=10)
        prober.close()
        if mode != "hit":
            sink.close()
        prs = after["read_prs_in"] - before["read_prs_in"]
        pk = after["packets_in"] - before["packets_in"]
        res = {"mode": mode, "seconds": elapsed, "prs_in": prs, "prs_per_s": prs / elapsed,
               "packets_in_per_s": pk / elapsed, "prs_out_per_s": (after["prs_out"] - before["prs_out"]) / elapsed,
               "out_prs_per_packet": after["prs_per_packet"], "cache_hits": after["cache_hits"],
               "errors": after["errors"], "vs_bmv2_packets": pk / elapsed / BMV2_PACKETS_PER_S}
        if idle:
            res["latency_us_idle"] = pct(idle)
        if loaded:
            res["latency_us_loaded"] = pct(loaded)
        return res
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--prop-bytes", type=int, default=64)
    p.add_argument("--frame-packets", type=int, default=32)
    p.add_argument("--window", type=int, default=4, help="frames in flight per client")
    p.add_argument("--probes", type=int, default=300)
    p.add_argument("--modes", default="hit,forward")
    args = p.parse_args()
    results = [run_mode(m, args) for m in args.modes.split(",")]
    for r in results:
        lat = "".join(f"  latency {k[11:]} p50/p90/p99 = {v['p50']:.0f}/{v['p90']:.0f}/{v['p99']:.0f} us"
                      for k, v in r.items() if k.startswith("latency_us"))
        print(f"{r['mode']:8s} {r['prs_per_s'] / 1e6:6.3f} M PRs/s in, {r['packets_in_per_s'] / 1e3:7.1f} k packets/s "
              f"in ({r['vs_bmv2_packets']:.2f}x bmv2's 80k), out {r['out_prs_per_packet']:.1f} PRs/packet{lat}")
    path = write_result("switch_service", {"args": vars(args), "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
