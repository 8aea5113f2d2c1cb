"""CUDA SpMM: the Triton kernel against cuSPARSE (``torch.sparse.mm``) with int32 and with int64 indices.

    python benchmarks/gpu_kernels.py [--ks 16 32 64 128 256] [--chunks 32 64] [--orders longest buckets]
                                     [--graphs ...] [--reps 10]
                                     [--hbm-gbs GBS] [--out PATH]
    python benchmarks/gpu_kernels.py --device cpu --small      # the same code path on tiny inputs (CI)

Graphs (the data folder is ``$NETSPARSE_DATA``, default ../shared/data): two power-law graphs,
``ego-twitter`` (SNAP, 81K rows, 2.7M nonzeros) and ``powerlaw-1m`` (Chung-Lu, 1M rows, exponent 2.1,
mean degree 16: :func:`hw_models.synthetic.power_law`, seed 0), and two meshes, ``mesh-1m`` (FEM-like
band, 1M rows: :func:`hw_models.synthetic.banded`) and ``delaunay_n16`` (SuiteSparse, a planar mesh).

At every feature width K it times the forward product ``A x B`` and the backward product ``A^T x G``
(on the cached transpose) with: ``triton-c<N>`` (the Triton kernel, rows of more than N nonzeros cut
into chunks of N, for each ``--chunks`` N; segments longest first) and ``triton-c<N>-buckets`` (the
same segments by length bucket, in row order inside one: ``make_plan(order="buckets")``, for each
``--orders`` other than ``longest``), ``cusparse-i32`` and ``cusparse-i64`` (``torch.sparse.mm``
on a CSR tensor with those index types) and ``auto`` (what ``kernels.spmm(a, B)`` picks, timed once per
CSR). Times are milliseconds of GPU time (``netsparse_torch.kernels._choice.cuda_timer``: after
warm-ups that absorb compilation and autotuning, the median of batches queued behind a sleeping
kernel, so launch overhead is not counted). Every result is checked against cuSPARSE's.

It prints and writes (``--out``, default benchmarks/results/gpu_kernels.json): each kernel's time, its
speed relative to ``cusparse-i32`` (``ms(cusparse-i32) / ms(kernel)``: above 1 is faster), its
fraction of the HBM bound of the gather model (``nnz * K * itemsize`` bytes, every nonzero reading one
B row; index, value and output bytes left out, over the peak bandwidth) and a summary against the
goal: the best Triton chunk at >= 1.2x cuSPARSE int32 for K = 32-256 on the power-law graphs, >= 1.0x
on the meshes, with the shortfall where it is missed.

Without a CUDA device it writes ``{"skipped": ...}`` and exits 0. ``--device cpu --small`` runs tiny
graphs through the Triton interpreter and wall-clock timers so CI sees the script does not rot; its
numbers mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GRAPHS, RESULTS, machine, median_time  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks")

# Peak HBM bandwidth by device name, GB/s (vendor datasheets: H100 SXM5 3.35 TB/s, H100 PCIe 2.0 TB/s,
# H200 4.8 TB/s, A100 SXM 80GB 2.039 TB/s). The first name that the device's name contains wins.
HBM_GBS = (("H200", 4800.0, "NVIDIA H200 datasheet: 4.8 TB/s"),
           ("H100 PCIe", 2000.0, "NVIDIA H100 PCIe datasheet: 2.0 TB/s"),
           ("H100", 3350.0, "NVIDIA H100 SXM datasheet: 3.35 TB/s"),
           ("A100", 2039.0, "NVIDIA A100 80GB SXM datasheet: 2.039 TB/s"))
BASELINE = "cusparse-i32"
#: The issue's goal per graph class: the best Triton chunk's speed relative to cuSPARSE int32, at every
#: K in GOAL_KS.
GOALS = {"power-law": 1.2, "mesh": 1.0}
GOAL_KS = range(32, 257)
MILLION = 1_000_000


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--small", action="store_true", help="tiny graphs (with --device cpu: the CI check)")
    p.add_argument("--ks", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    p.add_argument("--chunks", type=int, nargs="+", default=[32, 64], help="long-row chunk sizes of the Triton kernel")
    p.add_argument("--orders", nargs="+", default=["longest", "buckets"], choices=("longest", "buckets"),
                   help="segment orders of the Triton kernel's plan")
    p.add_argument("--graphs", nargs="+", default=None, help="a subset of the graphs (default: all)")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--hbm-gbs", type=float, default=None, help="peak HBM GB/s (default: by device name)")
    p.add_argument("--out", type=Path, default=RESULTS / "gpu_kernels.json")
    return p.parse_args(argv)


def hbm_peak(args, device: torch.device) -> tuple[float | None, str]:
    """(GB/s, where the number comes from) for the HBM-bound fractions."""
    if args.hbm_gbs is not None:
        return args.hbm_gbs, "--hbm-gbs"
    if device.type != "cuda":
        return None, "no HBM on CPU: fractions not computed"
    name = torch.cuda.get_device_name(device)
    for key, gbs, source in HBM_GBS:
        if key in name:
            return gbs, f"default for {name!r}: {source}"
    return None, f"no default for {name!r}: pass --hbm-gbs"


def _mtx(name: str) -> sp.csr_matrix:
    m = sp.csr_matrix(scipy.io.mmread(GRAPHS / f"{name}.mtx.gz"))
    m.sum_duplicates()
    m.sort_indices()
    return m


#: name -> (class, how to build it). Built one at a time, so only one large graph is in memory.
SOURCES = {
    "ego-twitter": ("power-law", lambda: _mtx("ego-twitter")),
    "powerlaw-1m": ("power-law", lambda: _synthetic("power_law", MILLION)),
    "mesh-1m": ("mesh", lambda: _synthetic("banded", MILLION)),
    "delaunay_n16": ("mesh", lambda: _mtx("delaunay_n16")),
}
SMALL = {"powerlaw-small": ("power-law", lambda: _synthetic("power_law", 32, avg_degree=4.0)),
         "mesh-small": ("mesh", lambda: _synthetic("banded", 24, bandwidth=3))}


def _synthetic(shape: str, n: int, **params) -> sp.csr_matrix:
    from hw_models import synthetic

    return getattr(synthetic, shape)(n, seed=0, **params)


def timer(device: torch.device, reps: int):
    """Median milliseconds of ``fn()``: GPU time on CUDA, wall clock on CPU."""
    if device.type == "cuda":
        from netsparse_torch.kernels._choice import cuda_timer

        t = cuda_timer(warmup=3, reps=reps)
        return lambda fn: t(fn) * 1e3
    return lambda fn: median_time(fn, reps, 0) * 1e3


def to_csr(m: sp.csr_matrix, device: torch.device):
    from netsparse_torch import kernels

    crow = torch.from_numpy(m.indptr.astype(np.int64)).to(device)
    col = torch.from_numpy(m.indices.astype(np.int64)).to(device)
    val = torch.from_numpy(m.data.astype(np.float32)).to(device)
    return kernels.CSR(crow, col, val, m.shape[1])


def candidates(a, chunks: list[int], orders: list[str], device: torch.device) -> dict[str, dict]:
    """{direction: {kind: fn(dense)}} for the CSR ``a`` (backward: its cached transpose)."""
    from netsparse_torch import kernels
    from netsparse_torch.kernels import _choice, _ops
    from netsparse_torch.kernels import triton_kernels as tk

    out = {}
    for direction, m in (("forward", a), ("backward", a.transposed())):
        kinds = {}
        for chunk in chunks:
            for order in orders:
                plan = tk.make_plan(m.crow, m.col, long_row=chunk, chunk=chunk, order=order)
                name = f"triton-c{chunk}" + ("" if order == "longest" else f"-{order}")
                kinds[name] = lambda X, m=m, plan=plan: tk.spmm(m.crow, m.col, m.val, X, plan)
        for bits, index in ((32, torch.int32), (64, torch.int64)):
            t = torch.sparse_csr_tensor(m.crow.to(index), m.col.to(index), m.val, (m.n_rows, m.n_cols))
            kinds[f"cusparse-i{bits}"] = lambda X, t=t: torch.sparse.mm(t, X)
        if device.type == "cuda":  # the public call: times both kernels once per CSR, keeps the faster
            kinds["auto"] = (lambda X: kernels.spmm(a, X)) if direction == "forward" else (lambda X: a.t_matmul(X))
        else:  # on CPU "auto" means the C++ kernel: the CUDA choice, made through the function it calls
            def run(b, X, d=direction):
                return _ops.spmm_csr(b, a, a.val, X) if d == "forward" else _ops.spmm_t_csr(b, a, a.val, X, True)

            def auto(X, d=direction, run=run):
                return run(_choice.auto_spmm_backend(a, d, X, lambda b: run(b, X)), X)

            kinds["auto"] = auto
        out[direction] = kinds
    return out


def bench_graph(name: str, cls: str, m: sp.csr_matrix, args, device: torch.device, peak_gbs) -> list[dict]:
    a = to_csr(m, device)
    kinds = candidates(a, args.chunks, args.orders, device)
    time_ms = timer(device, args.reps)
    rows = []
    for k in args.ks:
        gen = torch.Generator(device=device).manual_seed(k)
        dense = {"forward": torch.randn(a.n_cols, k, device=device, generator=gen),
                 "backward": torch.randn(a.n_rows, k, device=device, generator=gen)}
        for direction, fns in kinds.items():
            rows.append(measure(name, cls, a, direction, k, {kind: (fn, dense[direction]) for kind, fn in fns.items()},
                                time_ms, peak_gbs))
        del dense
    return rows


def measure(name, cls, a, direction, k, fns, time_ms, peak_gbs) -> dict:
    ref = fns["cusparse-i64"][0](fns["cusparse-i64"][1])
    scale = float(ref.abs().max()) or 1.0
    err = {kind: float((fn(X) - ref).abs().max()) / scale for kind, (fn, X) in fns.items() if kind != "cusparse-i64"}
    ms = {kind: time_ms(lambda fn=fn, X=X: fn(X)) for kind, (fn, X) in fns.items()}
    triton = {kind: t for kind, t in ms.items() if kind.startswith("triton")}
    best = min(triton, key=triton.__getitem__)
    bound_ms = a.nnz * k * 4 / (peak_gbs * 1e9) * 1e3 if peak_gbs else None
    choice = a.kernel_choices().get(f"{direction}/K={k}/float32")
    row = {"graph": name, "class": cls, "rows": a.n_rows, "nnz": a.nnz, "direction": direction, "k": k, "ms": ms,
           "best_triton": best, "vs_cusparse_i32": {kind: ms[BASELINE] / t for kind, t in ms.items()},
           "hbm_fraction": {kind: bound_ms / t for kind, t in ms.items()} if bound_ms else None,
           "auto_choice": choice, "max_rel_err_vs_cusparse_i64": err, "ok": all(e < 1e-4 for e in err.values())}
    ratio = row["vs_cusparse_i32"][best]
    fractions = row["hbm_fraction"]
    frac = f"  HBM {fractions[best]:.2f} (cusparse-i32 {fractions[BASELINE]:.2f})" if bound_ms else ""
    print(f"{name:14s} {direction:8s} K={k:<4d} " + "  ".join(f"{kind} {t:8.3f}" for kind, t in ms.items())
          + f" ms  {best}/cusparse-i32 {ratio:.2f}x  auto={choice}{frac}" + ("" if row["ok"] else f"  MISMATCH {err}"))
    return row


def summarize(rows: list[dict]) -> list[dict]:
    """Per graph and direction: the best Triton chunk's least speed relative to cuSPARSE int32 over the
    goal's K range, the goal, and by how much it is missed (``shortfall``: the fraction of the goal)."""
    out = []
    for graph, direction in dict.fromkeys((r["graph"], r["direction"]) for r in rows):
        mine = [r for r in rows if (r["graph"], r["direction"]) == (graph, direction) and r["k"] in GOAL_KS]
        if not mine:
            continue
        worst = min(mine, key=lambda r: r["vs_cusparse_i32"][r["best_triton"]])
        ratio, goal = worst["vs_cusparse_i32"][worst["best_triton"]], GOALS[worst["class"]]
        out.append({"graph": graph, "class": worst["class"], "direction": direction, "goal": goal,
                    "least_ratio": ratio, "at_k": worst["k"], "met": ratio >= goal,
                    "shortfall": max(0.0, 1.0 - ratio / goal),
                    "ratio_by_k": {r["k"]: r["vs_cusparse_i32"][r["best_triton"]] for r in mine},
                    "best_chunk_by_k": {r["k"]: r["best_triton"] for r in mine}})
    return out


def main(argv=None) -> int:
    args = parse(argv)
    device = torch.device(args.device)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("skipped: no CUDA device")
        args.out.write_text(json.dumps({"benchmark": "gpu_kernels", "skipped": "no CUDA device"}, indent=2))
        return 0
    if device.type == "cpu":
        if not args.small:
            raise SystemExit("--device cpu runs only with --small (the Triton interpreter is far too slow otherwise)")
        # Read by @triton.jit when the kernels module is imported, which happens below; CPU tensors run
        # Triton only in the interpreter.
        os.environ["TRITON_INTERPRET"] = "1"
        from netsparse_torch.kernels import _choice

        _choice.TIMER = lambda fn: timer(device, 1)(fn) / 1e3
    sources = SMALL if args.small else SOURCES
    unknown = set(args.graphs or ()) - set(sources)
    if unknown:
        raise SystemExit(f"gpu_kernels: unknown graph(s) {sorted(unknown)}; choose from {', '.join(sources)}")
    peak_gbs, peak_source = hbm_peak(args, device)
    t0 = time.perf_counter()
    rows, built_s = [], {}
    for name, (cls, build) in sources.items():
        if args.graphs and name not in args.graphs:
            continue
        t1 = time.perf_counter()
        m = build()
        built_s[name] = round(time.perf_counter() - t1, 1)
        print(f"{name}: {m.shape[0]:,} rows, {m.nnz:,} nonzeros, built in {built_s[name]} s")
        rows += bench_graph(name, cls, m, args, device, peak_gbs)
        del m
    summary = summarize(rows)
    for s in summary:
        print(f"goal {s['graph']:14s} {s['direction']:8s} >= {s['goal']}x cusparse-i32 at K 32-256: least "
              f"{s['least_ratio']:.2f}x at K={s['at_k']}: " + ("met" if s["met"] else f"short by {s['shortfall']:.0%}"))
    payload = {"benchmark": "gpu_kernels", "machine": machine(), "device": str(device),
               "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (interpreter)",
               "hbm_gbs": peak_gbs, "hbm_gbs_source": peak_source, "baseline": BASELINE,
               "bound_model": "gather: nnz * K * 4 bytes (float32) / peak HBM bandwidth",
               "command": " ".join(["python", "benchmarks/gpu_kernels.py", *(argv or sys.argv[1:])]),
               "graph_build_s": built_s, "seconds": time.perf_counter() - t0, "rows": rows, "goals": summary}
    args.out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {args.out} ({payload['seconds']:.0f} s)")
    bad = [r for r in rows if not r["ok"]]
    if bad:
        print(f"{len(bad)} results differ from cuSPARSE: see max_rel_err_vs_cusparse_i64 in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
