"""``backend="auto"`` on CUDA: which SpMM kernel, Triton or ``torch.sparse.mm`` (cuSPARSE), a run uses
for one feature width, dtype and direction (``forward`` ``A x B``, ``backward`` ``A^T x G``).

Neither need win everywhere (the Triton kernel is built for power-law rows, cuSPARSE is tuned per
GPU), and the graph is static, so the candidates are timed once and the faster kept. In a
distributed run the choice is taken once per width and dtype, for both directions, by every rank
together (:func:`agree`): each rank times the candidates on its own rows, in turn (ranks that share a
GPU would otherwise time each other's kernels), and every rank takes the candidate whose slowest rank
is fastest (:func:`decide`), so that no two ranks run different kernels. Outside a run (a CSR used on
its own) each CSR times the candidates itself. ``NETSPARSE_CUDA_SPMM=triton|torch`` forces one.

Each candidate runs with its own best index type: the Triton plan's int32 indices and cuSPARSE's
(``torch.sparse.mm`` hands cuSPARSE the index type of the tensor: int32 where the sizes fit,
:meth:`netsparse_torch.kernels.CSR.cusparse_indices`). The timer (:func:`cuda_timer`) measures the
GPU's time only: after warm-up calls (Triton's compile and autotuning, cuSPARSE's first-call setup), a
batch of calls queues behind a sleeping kernel, so the launch overhead of the host is not counted.
Choosing is a plain function of the candidates and a timer, so it is tested on CPU with fake timers.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import torch

SPMM_CANDIDATES = ("triton", "torch")
# Forces the CUDA SpMM kernel that backend="auto" uses, skipping the timing (for A/B runs and bisecting).
FORCE_ENV = "NETSPARSE_CUDA_SPMM"
DIRECTIONS = ("forward", "backward")

Timer = Callable[[Callable[[], object]], float]

_RECORDED: list[dict] = []
#: The run's agreed kernel per choice key (:func:`agree`), read before any CSR times its own.
_AGREED: dict[str, str] = {}
_AGREEMENTS: list[dict] = []


def choose_fastest(candidates: Mapping[str, Callable[[], object]], timer: Timer) -> tuple[str, dict[str, float]]:
    """``(name, seconds)``: the candidate with the least ``timer(fn)`` seconds (the first listed on a
    tie) and every candidate's time."""
    if not candidates:
        raise ValueError("choose_fastest: no candidates")
    seconds = {name: float(timer(fn)) for name, fn in candidates.items()}
    return min(seconds, key=seconds.__getitem__), seconds


# About 10 ms of GPU time on a 1.5-2 GHz part: long enough for a batch of launches to queue behind it.
_HOLD_CYCLES = 20_000_000


def cuda_timer(warmup: int = 3, reps: int = 10, batches: int = 3) -> Timer:
    """Seconds per call on the current CUDA device: after ``warmup`` calls, the median over ``batches``
    of ``reps`` back-to-back calls timed with CUDA events, each batch queued behind a kernel that holds
    the stream (``torch.cuda._sleep``), so the events see the GPU's time and not the host's launches."""

    def time_it(fn: Callable[[], object]) -> float:
        for _ in range(warmup):
            fn()
        torch.cuda.current_stream().synchronize()
        per_call = []
        for _ in range(batches):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(_HOLD_CYCLES)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            per_call.append(start.elapsed_time(end) / 1e3 / reps)
        return statistics.median(per_call)

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
    else the run's agreed one (:func:`agree`), else the cached choice, else the faster of
    ``run("triton")`` and ``run("torch")`` timed now."""
    key = choice_key(direction, dense.size(1), dense.dtype)
    forced = forced_backend()
    if forced is not None:  # recorded like a timed choice, with no times, so a report still shows it
        return a.kernel_choice(key, {forced: partial(run, forced)}, _untimed, how="forced")
    if key in _AGREED:
        return a.kernel_choice(key, {_AGREED[key]: partial(run, _AGREED[key])}, _untimed, how="agreed")
    # partial(run, name): a test's fake timer can read the candidate's name from .args without running it.
    with _on(dense.device):
        return a.kernel_choice(key, {name: partial(run, name) for name in SPMM_CANDIDATES}, TIMER)


def _on(device: torch.device):
    """The device context of the timing: CUDA events and streams are the current device's."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


def _untimed(fn) -> float:
    return float("nan")


def decide(per_rank: Sequence[Mapping[str, float]]) -> str:
    """The candidate whose slowest rank is fastest (a step waits for its slowest rank), the first listed
    on a tie: the same answer on every rank that holds the same list."""
    names = list(per_rank[0])
    return min(names, key=lambda name: (max(times[name] for times in per_rank), names.index(name)))


def agreed(k: int, dtype: torch.dtype) -> bool:
    """Whether this run has agreed the kernels of width ``k`` and ``dtype`` (both directions)."""
    return all(choice_key(d, k, dtype) in _AGREED for d in DIRECTIONS)


def agree(a, k: int, dtype: torch.dtype, rank: int, world_size: int, exchange: Callable[[object], list],
          timer: Timer | None = None) -> dict:
    """Take the run's kernels for width ``k`` and ``dtype``, both directions, with every rank of a group:
    this rank times each candidate on its matrix ``a`` (a :class:`~netsparse_torch.kernels.CSR`) when its
    turn comes, in rank order, and every rank takes :func:`decide` of every rank's times. ``exchange(x)``
    returns every rank's ``x`` in rank order (an all-gather; ``lambda x: [x]`` alone); every rank calls
    it ``world_size + 1`` times. Returns the agreement as the report keeps it."""
    from netsparse_torch.kernels import CSR, _ops

    timer = timer or TIMER
    # The columns it reads, renumbered in order: the same gathers, and no dense operand as tall as a
    # global column space (ds's) when the rank reads a fraction of it.
    used, col = torch.unique(a.col, sorted=True, return_inverse=True)
    a = CSR(a.crow, col, a.val.detach(), used.numel(), check_columns=False)
    gen = torch.Generator(device=a.device).manual_seed(k)
    B = torch.randn(a.n_cols, k, dtype=dtype, device=a.device, generator=gen)
    G = torch.randn(a.n_rows, k, dtype=dtype, device=a.device, generator=gen)
    val = a.val.detach().to(dtype)
    runs = {"forward": lambda b: _ops.spmm_csr(b, a, val, B),
            "backward": lambda b: _ops.spmm_t_csr(b, a, val, G, constant=True)}
    mine: dict[str, dict[str, float]] = {}
    for turn in range(world_size):
        if turn == rank:
            with _on(a.device):
                mine = {choice_key(d, k, dtype): {name: float(timer(partial(runs[d], name))) * 1e3
                                                  for name in SPMM_CANDIDATES} for d in DIRECTIONS}
        exchange(None)  # the next rank's turn starts when this one's timing is over
    everyone = exchange(mine)
    choices = {key: decide([ms[key] for ms in everyone]) for key in mine}
    _AGREED.update(choices)
    agreement = {"keys": choices, "rule": "the candidate whose slowest rank is fastest", "ms_per_rank": everyone}
    _AGREEMENTS.append(agreement)
    return agreement


def agreed_choices() -> list[dict]:
    """Every agreement this process took part in (:func:`agree`): the kernel per key, the rule, and
    every rank's milliseconds per key and candidate."""
    return [dict(a) for a in _AGREEMENTS]


def forget_agreements() -> None:
    """Drop the run's agreed kernels (a new run in the same process times again)."""
    _AGREED.clear()
    _AGREEMENTS.clear()


def record(a, key: str, choice: str, seconds: Mapping[str, float], how: str = "timed") -> None:
    """Adds one made choice to the process-wide list that :func:`recorded_choices` returns (``how``:
    ``timed`` by this CSR, ``forced`` by ``NETSPARSE_CUDA_SPMM`` or ``agreed`` by the run's ranks; the
    latter two carry no times here)."""
    _RECORDED.append({"key": key, "rows": a.n_rows, "cols": a.n_cols, "nnz": a.nnz, "choice": choice,
                      "forced": how == "forced", "how": how,
                      "ms": {name: s * 1e3 for name, s in seconds.items() if s == s}})  # s == s: not NaN


def recorded_choices() -> list[dict]:
    """Every choice ``backend="auto"`` has made in this process, in order: the CSR's shape and nnz,
    the key (``direction/K=../dtype``), the chosen backend, how (``timed``, ``forced``, ``agreed``),
    and each candidate's time in ms when this CSR timed them."""
    return [dict(r, ms=dict(r["ms"])) for r in _RECORDED]
