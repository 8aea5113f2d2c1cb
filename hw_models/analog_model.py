"""The modeled training block of a paper analog (:func:`hw_models.analysis.modeled_training`), with the
parts that need the pattern cached on disk.

At full size (10^8-10^9 nonzeros) one NetSparse simulation per gather width takes tens of seconds to
minutes and a few GiB (docs/benchmarks.md, "The paper-scale targets"). What the block needs of the
pattern is small: each virtual node's work and, per distinct gather ``(K, kernel)``, each node's
SUOpt, SAOpt and NetSparse communication time. Those are cached in one JSON file per analog (generator
digest: version, parameters, seed, scale), hardware (the cluster included), node partition and
simulator build, and grow by the gathers a later run adds. A run that finds every gather it needs
builds the block without generating the pattern; the compute model is applied afterwards, so one
entry serves every compute model and every training world size. JSON floats round-trip exactly: a
block built from the cache equals the one computed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from hw_models import analogs, compute
from hw_models.analysis import NetSparseSimulator, gather_comm_times, gather_specs, training_block, workload_for
from hw_models.errors import ConfigError
from hw_models.memory import available_bytes
from hw_models.params import HardwareParams

SIMULATION_OVERHEAD_BYTES = 2 << 30
"""Memory a full-size model needs beyond its pattern: the measured peak RSS of the five analogs' full-size
K=16 simulations minus their patterns is 0.95-1.83 GiB (docs/benchmarks.md, "The paper-scale targets";
our rounding up)."""

CACHE_VERSION = 1
"""Bumped when the cached fields change meaning."""

Progress = Callable[[Sequence], Sequence]


def needed_bytes(m: analogs.PaperMatrix, scale: float) -> int:
    """Memory the model of ``m`` at ``scale`` needs when it must generate and simulate the pattern."""
    return analogs.pattern_bytes(m, scale) + SIMULATION_OVERHEAD_BYTES


class AnalogModelCache:
    """The cache file of one analog on one hardware, node partition and simulator build."""

    def __init__(self, cache_dir: str | os.PathLike, m: analogs.PaperMatrix, scale: float, seed: int,
                 params: HardwareParams, partition: str, simulated: bool):
        self.m, self.scale, self.seed = m, scale, int(seed)
        key = {"version": CACHE_VERSION, "analog": analogs.digest(m, scale, seed), "hardware": params.to_dict(),
               "partition": partition, "simulated": simulated, "simulator_build": simulator_build()}
        digest = hashlib.blake2b(json.dumps(key, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()
        self.path = Path(cache_dir) / f"{analogs.display_name(m, scale)}-seed{seed}-{digest}.json"
        self.key = key
        self.entry = self._read()

    def _read(self) -> dict:
        try:
            entry = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {"key": self.key, "work": None, "gathers": {}}
        return entry if entry.get("key") == json.loads(json.dumps(self.key, default=str)) else \
            {"key": self.key, "work": None, "gathers": {}}

    def missing(self, specs: list[tuple[int, str]]) -> list[tuple[int, str]]:
        return [s for s in dict.fromkeys(specs) if _name(s) not in self.entry["gathers"]]

    def complete(self, specs: list[tuple[int, str]]) -> bool:
        return self.entry["work"] is not None and not self.missing(specs)

    def work(self) -> compute.NodeWork:
        w = self.entry["work"]
        return compute.NodeWork(*(np.asarray(w[f], dtype=np.int64) for f in ("rows", "nnz", "distinct_cols")))

    def comm(self, spec: tuple[int, str]) -> dict[str, np.ndarray | None]:
        return {s: None if t is None else np.asarray(t, dtype=np.float64)
                for s, t in self.entry["gathers"][_name(spec)].items()}

    def add(self, work: compute.NodeWork, spec: tuple[int, str] | None = None,
            comm: dict[str, np.ndarray | None] | None = None) -> None:
        """Record the work and, with ``spec``, one gather's times; written at once (a long run that stops
        keeps what it simulated)."""
        self.entry["work"] = {"rows": work.rows.tolist(), "nnz": work.nnz.tolist(),
                              "distinct_cols": work.distinct_cols.tolist()}
        if spec is not None and comm is not None:
            self.entry["gathers"][_name(spec)] = {s: None if t is None else np.asarray(t).tolist()
                                                  for s, t in comm.items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.entry, default=str))
        os.replace(tmp, self.path)


def _name(spec: tuple[int, str]) -> str:
    return f"{spec[1]}:{spec[0]}"


def simulator_build() -> str:
    """A digest of the compiled simulator (``hw_models._C``): a rebuilt simulator never reads an entry that
    an older build simulated."""
    from hw_models import _C

    h = hashlib.blake2b(digest_size=8)
    with open(_C.__file__, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def analog_training(m: analogs.PaperMatrix, scale: float, seed: int, params: HardwareParams,
                    gathers: Sequence[int | tuple[int, str]], compute_model: object | None = None,
                    partition: str = "rows", simulator: NetSparseSimulator | None = None,
                    cache_dir: str | os.PathLike | None = None, analog_cache: str | os.PathLike | None = None,
                    progress: Progress | None = None, memory_bytes: int | None = None) -> dict:
    """:func:`~hw_models.analysis.modeled_training` of the analog ``m`` at ``scale``, through the cache in
    ``cache_dir`` (none: everything computed). The pattern is generated (or read from ``analog_cache``)
    only when a gather is missing, after a check that it fits in ``memory_bytes`` (default: what
    :func:`available_bytes` says). ``progress`` wraps the list of gathers simulated. The block has two
    keys more than ``modeled_training``'s: ``matrix`` (the analog's rows and nonzeros) and ``model_cache``
    (the cache file, whether the pattern was generated, the gathers computed rather than read)."""
    specs = gather_specs(gathers)
    cache = None if cache_dir is None else AnalogModelCache(cache_dir, m, scale, seed, params, partition,
                                                            simulator is not None)
    todo = list(dict.fromkeys(specs)) if cache is None else cache.missing(specs)
    generated = cache is None or not cache.complete(specs)
    if generated:
        check_fits(m, scale, memory_bytes)
        a, _ = analogs.load(f"paper:{m.name}@{scale:g}", seed, analog_cache)
        w = workload_for(a, params, partition)
        work = compute.NodeWork.of(w)
        computed = {}
        for spec in (progress or list)(todo):
            computed[spec] = gather_comm_times(a, w, params, *spec, simulator)
            if cache is not None:
                cache.add(work, spec, computed[spec])
        if cache is not None and not todo:
            cache.add(work)
        del a, w
    if cache is not None:
        work, computed = cache.work(), {s: cache.comm(s) for s in dict.fromkeys(specs)}
    block = training_block(params, specs, work, computed, compute_model, partition, simulator is not None)
    block["matrix"] = {"rows": int(work.rows.sum()), "nnz": int(work.nnz.sum())}
    block["model_cache"] = {"path": None if cache is None else str(cache.path), "pattern_generated": generated,
                            "gathers_computed": [{"k": k, "kernel": kernel} for k, kernel in todo]}
    return block


def check_fits(m: analogs.PaperMatrix, scale: float, memory_bytes: int | None = None) -> None:
    """One :class:`ConfigError` when generating and simulating ``m`` at ``scale`` would not fit in memory."""
    have = available_bytes() if memory_bytes is None else memory_bytes
    need = needed_bytes(m, scale)
    if have is not None and need > have:
        raise ConfigError(f"the model of {analogs.display_name(m, scale)} needs about {need / 2**30:.1f} GiB "
                          f"(its pattern {analogs.pattern_bytes(m, scale) / 2**30:.1f} GiB plus the simulator's "
                          f"{SIMULATION_OVERHEAD_BYTES / 2**30:.0f} GiB), {have / 2**30:.1f} GiB are available: run it "
                          "where more memory is free, or without cluster.full_size")
