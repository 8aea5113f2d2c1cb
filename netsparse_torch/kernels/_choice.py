"""``backend="auto"`` on CUDA: which SpMM kernel, Triton or ``torch.sparse.mm`` (cuSPARSE), is faster
for one adjacency, feature width, dtype and direction (``forward`` ``A x B``, ``backward`` ``A^T x G``).

Neither wins everywhere (issue 25: the row-split Triton kernel ran at 0.21-0.39x cuSPARSE on an
H200), and the graph is static, so each CSR times both once per key, keeps the faster, and can say
which it chose (:meth:`netsparse_torch.kernels.CSR.kernel_choices`, :func:`recorded_choices`).
The choosing is a plain function of the candidates and a timer, so it is tested on CPU with fake timers.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Mapping
from functools import partial

import torch

SPMM_CANDIDATES = ("triton", "torch")
# Forces the CUDA SpMM kernel that backend="auto" uses, skipping the timing (for A/B runs and bisecting).
FORCE_ENV = "NETSPARSE_CUDA_SPMM"

Timer = Callable[[Callable[[], object]], float]

_RECORDED: list[dict] = []


def choose_fastest(candidates: Mapping[str, Callable[[], object]], timer: Timer) -> tuple[str, dict[str, float]]:
    """``(name, seconds)``: the candidate with the least ``timer(fn)`` seconds (the first listed on a
    tie) and every candidate's time."""
    if not candidates:
        raise ValueError("choose_fastest: no candidates")
    seconds = {name: float(timer(fn)) for name, fn in candidates.items()}
    return min(seconds, key=seconds.__getitem__), seconds


def cuda_timer(warmup: int = 2, reps: int = 5) -> Timer:
    """Median seconds of ``reps`` calls measured with CUDA events, after ``warmup`` calls (these absorb
    Triton's compile and autotuning, and cuSPARSE's first-call setup)."""

    def time_it(fn: Callable[[], object]) -> float:
        for _ in range(warmup):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(reps):
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return statistics.median(times)

    return time_it


# The timer auto-dispatch uses; tests replace it.
TIMER: Timer = cuda_timer()


def choice_key(direction: str, k: int, dtype: torch.dtype) -> str:
    """``"forward/K=16/float32"``: the key of one choice in :meth:`CSR.kernel_choices`."""
    return f"{direction}/K={k}/{str(dtype).removeprefix('torch.')}"


def forced_backend() -> str | None:
    """The backend named by ``NETSPARSE_CUDA_SPMM``, or None when unset."""
    forced = os.environ.get(FORCE_ENV, "")
    if forced and forced not in SPMM_CANDIDATES:
        raise ValueError(f"{FORCE_ENV}={forced!r}: choose one of {SPMM_CANDIDATES} (or unset it to time both)")
    return forced or None


def auto_spmm_backend(a, direction: str, dense: torch.Tensor, run: Callable[[str], object]) -> str:
    """The SpMM backend ``"auto"`` means for CSR ``a`` with ``dense`` (``B`` or ``G``): the forced one,
    else the cached choice, else the faster of ``run("triton")`` and ``run("torch")`` timed now."""
    key = choice_key(direction, dense.size(1), dense.dtype)
    forced = forced_backend()
    if forced is not None:  # recorded like a timed choice, with no times, so a report still shows it
        return a.kernel_choice(key, {forced: partial(run, forced)}, _untimed)
    # partial(run, name): a test's fake timer can read the candidate's name from .args without running it.
    return a.kernel_choice(key, {name: partial(run, name) for name in SPMM_CANDIDATES}, TIMER)


def _untimed(fn) -> float:
    return float("nan")


def record(a, key: str, choice: str, seconds: Mapping[str, float]) -> None:
    """Adds one made choice to the process-wide list that :func:`recorded_choices` returns (a forced
    choice has one candidate, timed NaN: no times)."""
    _RECORDED.append({"key": key, "rows": a.n_rows, "cols": a.n_cols, "nnz": a.nnz, "choice": choice,
                      "forced": len(seconds) == 1,
                      "ms": {name: s * 1e3 for name, s in seconds.items() if s == s}})  # s == s: not NaN


def recorded_choices() -> list[dict]:
    """Every choice ``backend="auto"`` has made in this process, in order: the CSR's shape and nnz,
    the key (``direction/K=../dtype``), the chosen backend, whether ``NETSPARSE_CUDA_SPMM`` forced it,
    and each candidate's time in ms."""
    return [dict(r, ms=dict(r["ms"])) for r in _RECORDED]
