"""``netsparse-calibrate``: measure the Two-Face cost model on this machine and backend, fit it.

As in Two-Face §6.2, a small set of configurations is timed between two ranks:

- synchronous transfer: ``S`` dense stripes of ``W`` rows x ``K``, picked and sent in one message as
  the grouped exchange of ``strategy=twoface`` does, ``T = S(beta_S K W + alpha_S)``;
- asynchronous transfer: ``L`` rows in ``S`` coalesced ranges, picked and sent in one message per
  peer as the runtime does (the row lists are agreed once at layout time, as one-sided gets know
  their offsets), ``T = beta_A K L + alpha_A S``;
- asynchronous computation: one one-sided SpMM with ``N`` nonzeros over ``S`` stripes,
  ``T = gamma_A K N + kappa_A S``.

Each pair of coefficients is fitted by least squares. It also measures whether the two channels
overlap here: one synchronous and one asynchronous exchange, each alone and both issued together as
``strategy=twoface`` issues them (``all_to_all_single`` with ``async_op=True``). The profile records
``overlap: max`` when together they take less than halfway between the longer one alone and the sum,
else ``overlap: sum``; the §5.1 classifier then balances the channels (max) or minimises their sum.

The profile is written where ``--out`` says (default: this run's directory,
``outputs/calibrate/<date>/<time>/twoface_profile.json``, as Hydra lays out run directories); nothing
reads it unless a run names it (``strategy.profile=PATH``).

:func:`calibrate_cpu` measures, the same way, the rate of the local SpMM kernel on this machine for
:class:`hw_models.compute.CPUModel` (``compute_model=cpu`` of ``netsparse-simulate`` and training reports).

    netsparse-calibrate [--out PATH] [--repeats 5]
"""

from __future__ import annotations

import itertools
import statistics
import time
from functools import partial

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist

from hw_models import compute
from hw_models.twoface.cost import Coefficients
from netsparse_torch.progress import Progress

SYNC_GRID = list(itertools.product([16, 64, 128], [32, 128, 512], [4, 16]))  # K, W, S
ASYNC_GRID = list(itertools.product([16, 64, 128], [64, 512, 2048], [4, 64]))  # K, L, S
COMP_GRID = list(itertools.product([16, 64, 128], [256, 2048, 16384], [4, 64]))  # K, N, S


def fit_pair(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Least-squares ``t ~ x a + y b`` (both >= 0); returns ``x, y`` and the relative RMS error."""
    design = np.column_stack([a, b]).astype(float)
    t = np.asarray(t, dtype=float)
    (x, y), *_ = np.linalg.lstsq(design / t[:, None], np.ones_like(t), rcond=None)  # relative residuals
    x, y = max(float(x), 0.0), max(float(y), 0.0)
    err = float(np.sqrt(np.mean(((design @ [x, y]) - t) ** 2 / t**2)))
    return x, y, err


def fit(samples: dict[str, list[tuple]]) -> tuple[Coefficients, dict[str, float]]:
    """Fit the six coefficients from ``samples[kind] = [(K, size, S, seconds), ...]`` with kind in
    ``sync`` (size = W), ``async`` (size = L) and ``comp`` (size = N)."""
    arr = {k: np.asarray(v, dtype=float) for k, v in samples.items()}
    for k in ("sync", "async", "comp"):
        if k not in arr or arr[k].ndim != 2 or arr[k].shape[0] < 2 or (arr[k][:, 3] <= 0).any():
            raise ValueError(f"calibration: need at least 2 positive timings of kind {k!r}")
    s = arr["sync"]
    beta_s, alpha_s, e_s = fit_pair(s[:, 2] * s[:, 0] * s[:, 1], s[:, 2], s[:, 3])
    a = arr["async"]
    beta_a, alpha_a, e_a = fit_pair(a[:, 0] * a[:, 1], a[:, 2], a[:, 3])
    c = arr["comp"]
    gamma_a, kappa_a, e_c = fit_pair(c[:, 0] * c[:, 1], c[:, 2], c[:, 3])
    coeffs = Coefficients(beta_s, alpha_s, beta_a, alpha_a, gamma_a, kappa_a)
    return coeffs, {"sync": e_s, "async": e_a, "comp": e_c}


def _once(fn) -> float:
    dist.barrier()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _timed(fn, repeats: int) -> float:
    return statistics.median([_once(fn) for _ in range(repeats + 1)][1:])


def _send_rows(rank, x, ids, k):
    # Both transfer kinds leave the owner as the runtime sends them: rows picked by index_select from
    # the row lists agreed once at layout time, then one message per peer.
    if rank == 0:
        dist.send(x[:, :k].index_select(0, ids).contiguous(), 1)
    else:
        dist.recv(torch.empty(ids.numel(), k), 0)


def _sync(rank, k, w, s, x):
    """S dense stripes of W rows."""
    ids = torch.arange(s * w)
    return partial(_send_rows, rank, x, ids, k)


def _async(rank, k, rows, s, x):
    """L needed rows in S coalesced ranges spread over the owner's block (one-sided gets: the reader
    knows the offsets, so no id message travels per call)."""
    starts = torch.arange(s) * (x.size(0) // s)
    ids = (starts[:, None] + torch.arange(rows // s)[None, :]).reshape(-1)
    return partial(_send_rows, rank, x, ids, k)


def _comp(k, nnz, s, gen):
    # As the runtime does it: one one-sided SpMM over the fetched rows of all S stripes (S column
    # ranges of 16 rows), so kappa_A is the per-stripe cost inside one call, not a call's overhead.
    from netsparse_torch.kernels import spmm

    n_rows = 256
    crow = torch.linspace(0, nnz, n_rows + 1).long()
    col = (torch.randint(0, s, (nnz,), generator=gen) * 16 + torch.randint(0, 16, (nnz,), generator=gen))
    val = torch.rand(nnz, generator=gen)
    b = torch.randn(16 * s, k, generator=gen)
    return lambda: spmm(crow, col, val, b)


#: The overlap probe (own choice): K=128 and 8192 rows (4 MiB) per direction for each exchange, about
#: one layer's exchange on the benchmark graphs at 4 ranks. Equal sizes make the two outcomes furthest
#: apart (together = 1x alone when they overlap, 2x when they do not).
OVERLAP_PROBE = {"k": 128, "rows": 8192}


def _exchange(send: torch.Tensor, recv: torch.Tensor):
    """One exchange as the runtime starts it (non-blocking ``all_to_all_single``), half of ``send`` to
    each of the two ranks."""
    return dist.all_to_all_single(recv, send, async_op=True)


def measure_overlap(repeats: int) -> dict[str, float]:
    """Median seconds of the synchronous exchange alone, the asynchronous one alone, and both issued
    together, measured in alternation round after round (so load from other processes hits all three
    alike); ``serial_fraction`` = (both - longer) / shorter: 0 when they fully overlap, 1 when they take
    their sum."""
    k, rows = OVERLAP_PROBE["k"], OVERLAP_PROBE["rows"]
    bufs = [(torch.randn(2 * rows, k), torch.empty(2 * rows, k)) for _ in range(2)]

    def alone(i):
        _exchange(*bufs[i]).wait()

    def both():
        ws, wa = _exchange(*bufs[0]), _exchange(*bufs[1])
        wa.wait()
        ws.wait()

    runs = {"sync_s": partial(alone, 0), "async_s": partial(alone, 1), "both_s": both}
    times: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(4 * repeats + 1):
        for key, fn in runs.items():
            times[key].append(_once(fn))
    out = {key: statistics.median(t[1:]) for key, t in times.items()}  # the first round warms up
    out["serial_fraction"] = (out["both_s"] - max(out["sync_s"], out["async_s"])) / min(out["sync_s"], out["async_s"])
    return out


def overlap_of(probe: dict[str, float]) -> str:
    """``max`` when the two exchanges together take less than halfway from the longer alone to their sum."""
    return "max" if probe["serial_fraction"] < 0.5 else "sum"


def measure(rank: int, world_size: int, repeats: int) -> dict[str, list[tuple]]:
    """Time every configuration and the overlap probe (rank 0 shows the progress bar); returns rank 0's
    samples (``overlap``: the probe's timings)."""
    x = torch.randn(16384, 128)
    gen = torch.Generator().manual_seed(0)
    total = len(SYNC_GRID) + len(ASYNC_GRID) + len(COMP_GRID) + 1
    bar = Progress(total, "calibrate", every=10, enabled=rank == 0)  # a bar on a terminal, lines otherwise
    samples: dict = {"sync": [], "async": [], "comp": []}
    for k, w, s in SYNC_GRID:
        samples["sync"].append((k, w, s, _timed(_sync(rank, k, w, s, x), repeats)))
        bar.update(len(samples["sync"]), f"sync K={k} W={w} S={s}")
    for k, rows, s in ASYNC_GRID:
        samples["async"].append((k, rows, s, _timed(_async(rank, k, rows, s, x), repeats)))
        bar.update(len(SYNC_GRID) + len(samples["async"]), f"async K={k} L={rows} S={s}")
    for k, nnz, s in COMP_GRID:
        samples["comp"].append((k, nnz, s, _timed(_comp(k, nnz, s, gen), repeats)))
        bar.update(total - 1 - len(COMP_GRID) + len(samples["comp"]), f"comp K={k} N={nnz} S={s}")
    samples["overlap"] = measure_overlap(repeats)
    bar.update(total, "overlap probe")
    bar.close()
    return samples


def calibrate_cpu(a: sp.spmatrix | sp.sparray | None = None, k: int = 16, repeats: int = 10,
                  seed: int = 0) -> compute.CPUModel:
    """Time ``netsparse_torch.kernels.spmm`` on ``a`` (default: a random 20000 x 20000 matrix with
    10 uniformly random columns per row) at width ``k``; the best of ``repeats`` runs after one warm-up sets the rate.

    This measures the machine it runs on; its result is a measurement, never a paper number.
    """
    from netsparse_torch import kernels

    if a is None:  # uniform random columns, 10 per row (scipy.sparse.random is slow at this size)
        n, per_row = 20000, 10
        cols = np.sort(np.random.default_rng(seed).integers(0, n, (n, per_row)), axis=1).ravel()
        a = sp.csr_matrix((np.ones(n * per_row, np.float32), cols, np.arange(0, n * per_row + 1, per_row)), (n, n))
    a = sp.csr_matrix(a, dtype=np.float32)
    crow, col = torch.from_numpy(a.indptr.astype(np.int64)), torch.from_numpy(a.indices.astype(np.int64))
    val = torch.from_numpy(a.data)
    b = torch.randn(a.shape[1], k, generator=torch.Generator().manual_seed(seed))
    kernels.spmm(crow, col, val, b)  # warm-up: dispatch, caches
    best = float("inf")
    for _ in range(max(repeats, 1)):
        t0 = time.perf_counter()
        kernels.spmm(crow, col, val, b)
        best = min(best, time.perf_counter() - t0)
    src = f"kernels.spmm on {a.shape[0]}x{a.shape[1]}, nnz={a.nnz}, K={k}, {torch.get_num_threads()} threads"
    return compute.CPUModel.from_seconds(best, a.nnz, k, src)
