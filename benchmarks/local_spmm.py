"""Local SpMM kernels: the C++ CPU kernel against torch.sparse.mm (CSR), plus a roofline.

    python benchmarks/local_spmm.py [--all] [--graphs ego-twitter ...] [--k 16 64 128] [--threads 1 2]
                                    [--repeats 7] [--dtype float32] [--isa auto]

For every graph, thread count and feature width K it times ``netsparse_torch._C.spmm`` and
``torch.sparse.mm`` on the same CSR matrix (alternating the two, ``--repeats`` rounds), checks they
agree, and prints the speedup of the median times and of the best times (the latter is less
sensitive to other processes on a shared machine). Bandwidth: the bytes an SpMM must move if every nonzero fetches its B
row from memory (``gather`` model: A + nnz*K + output) and if B is read once (``compulsory`` model),
divided by the time, as a fraction of a ``torch`` copy of a 256 MiB buffer measured in the same run
and thread count. When a CUDA GPU is present it also times the Triton kernel against torch.sparse.mm
on it; otherwise it says so. Writes benchmarks/results/local_spmm.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GRAPHS, write_result  # noqa: E402

from netsparse_torch import kernels  # noqa: E402
from netsparse_torch.native import _C  # noqa: E402

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks")

POWER_LAW = ("ego-twitter", "soc-slashdot0902")
DEFAULT_GRAPHS = ("ego-twitter", "soc-slashdot0902", "delaunay_n16", "cage11")
ALL_GRAPHS = DEFAULT_GRAPHS + ("ct2010", "luxembourg_osm")


def load(name: str) -> sp.csr_matrix:
    """The graph's adjacency as a CSR with sorted columns (both triangles of a symmetric file)."""
    a = sp.csr_matrix(scipy.io.mmread(GRAPHS / f"{name}.mtx.gz"))
    a.sum_duplicates()
    a.sort_indices()
    return a


def paired_times(fns, repeats: int) -> list[list[float]]:
    """Times of each function over ``repeats`` rounds, calling them in alternation so that load from
    other processes on the machine hits all of them alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return times


def paired_medians(fns, repeats: int) -> list[float]:
    """Median time of each function (see :func:`paired_times`)."""
    return [statistics.median(ts) for ts in paired_times(fns, repeats)]


def copy_bandwidth(repeats: int) -> float:
    """GB/s of ``dst.copy_(src)`` on 256 MiB (read + write counted), the roofline's memory ceiling."""
    src = torch.ones(64 * 1024 * 1024)
    dst = torch.empty_like(src)
    (t,) = paired_medians([lambda: dst.copy_(src)], repeats)
    return 2 * src.numel() * src.element_size() / t / 1e9


def spmm_bytes(a: sp.csr_matrix, k: int, itemsize: int) -> tuple[int, int]:
    """(gather model, compulsory model) bytes of one SpMM with 64-bit indices."""
    a_bytes = 8 * (a.shape[0] + 1) + (8 + itemsize) * a.nnz
    out = a.shape[0] * k * itemsize
    return a_bytes + a.nnz * k * itemsize + out, a_bytes + a.shape[1] * k * itemsize + out


def print_row(r: dict) -> None:
    print(f"{r['graph']:17s} {r['threads']:>2d} {r['k']:>4d} {r['torch_ms']:9.2f} {r['cpp_ms']:8.2f} "
          f"{r['speedup']:6.2f}x {r['speedup_best']:5.2f}x {r['cpp_gbps_gather']:7.1f} {r['roofline_gather']:6.2f} "
          f"{r['cpp_gbps_compulsory']:7.1f} {r['roofline_compulsory']:6.2f}", flush=True)


def bench_cpu(name, a, ks, threads, repeats, dtype, isa, copy_gbps):
    crow = torch.from_numpy(a.indptr.astype(np.int64))
    col = torch.from_numpy(a.indices.astype(np.int64))
    val = torch.from_numpy(np.random.default_rng(0).uniform(0.5, 1.5, a.nnz)).to(dtype)
    at = torch.sparse_csr_tensor(crow, col, val, a.shape)
    rows = []
    for t in threads:
        torch.set_num_threads(t)
        for k in ks:
            B = torch.randn(a.shape[1], k, dtype=dtype, generator=torch.Generator().manual_seed(k))
            torch.testing.assert_close(_C.spmm(crow, col, val, B, isa), torch.sparse.mm(at, B), rtol=1e-4, atol=1e-4)
            times = paired_times([lambda B=B: torch.sparse.mm(at, B), lambda B=B: _C.spmm(crow, col, val, B, isa)],
                                 repeats)
            t_torch, t_cpp = (statistics.median(ts) for ts in times)
            gather_b, compulsory_b = spmm_bytes(a, k, B.element_size())
            row = {"graph": name, "threads": t, "k": k, "torch_ms": t_torch * 1e3, "cpp_ms": t_cpp * 1e3,
                   "speedup": t_torch / t_cpp, "speedup_best": min(times[0]) / min(times[1]),
                   "cpp_gbps_gather": gather_b / t_cpp / 1e9,
                   "cpp_gbps_compulsory": compulsory_b / t_cpp / 1e9, "copy_gbps": copy_gbps[t]}
            row["roofline_gather"] = row["cpp_gbps_gather"] / copy_gbps[t]
            row["roofline_compulsory"] = row["cpp_gbps_compulsory"] / copy_gbps[t]
            rows.append(row)
            print_row(row)
    return rows


def bench_cuda(name, a, ks, repeats, dtype):
    """Triton SpMM vs torch.sparse.mm on the GPU (CUDA-synchronised times)."""
    dev = torch.device("cuda")
    crow = torch.from_numpy(a.indptr.astype(np.int64)).to(dev)
    col = torch.from_numpy(a.indices.astype(np.int64)).to(dev)
    val = torch.rand(a.nnz, dtype=dtype, device=dev)
    at = torch.sparse_csr_tensor(crow, col, val, a.shape)
    rows = []
    for k in ks:
        B = torch.randn(a.shape[1], k, dtype=dtype, device=dev)

        def synced(fn):
            return lambda: (fn(), torch.cuda.synchronize())

        t_torch, t_triton = paired_medians([synced(lambda B=B: torch.sparse.mm(at, B)),
                                            synced(lambda B=B: kernels.spmm(crow, col, val, B, backend="triton"))],
                                           repeats)
        rows.append({"graph": name, "k": k, "torch_ms": t_torch * 1e3, "triton_ms": t_triton * 1e3,
                     "speedup": t_torch / t_triton})
        print(f"{name:17s} cuda {k:>4d} {t_torch * 1e3:9.3f} {t_triton * 1e3:9.3f} {t_torch / t_triton:7.2f}x")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graphs", nargs="+", default=list(DEFAULT_GRAPHS), choices=list(ALL_GRAPHS))
    p.add_argument("--all", action="store_true", help="every graph under shared/data/graphs")
    p.add_argument("--k", nargs="+", type=int, default=[16, 64, 128])
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--isa", default="auto", help="C++ kernel ISA: auto, avx512, avx2 or generic")
    args = p.parse_args()
    graphs = list(ALL_GRAPHS) if args.all else args.graphs
    dtype = getattr(torch, args.dtype)
    isa = _C.cpu_isa() if args.isa == "auto" else args.isa
    copy_gbps = {}
    for t in args.threads:
        torch.set_num_threads(t)
        copy_gbps[t] = copy_bandwidth(args.repeats)
    # Other processes on the machine slow the 2-thread runs most (a busy core stalls the team).
    load_before = os.getloadavg()[0]
    print(f"C++ kernel isa={isa}, dtype={args.dtype}, load average {load_before:.2f}; copy bandwidth " +
          ", ".join(f"{t} thread(s) {g:.1f} GB/s" for t, g in copy_gbps.items()))
    print(f"{'graph':17s} th    K  torch_ms   cpp_ms speedup   best  GB/s(g) roof(g) GB/s(c) roof(c)")
    cpu_rows, cuda_rows, loaded = [], [], {}
    for name in graphs:
        loaded[name] = load(name)
        cpu_rows += bench_cpu(name, loaded[name], args.k, args.threads, args.repeats, dtype, isa, copy_gbps)
    if torch.cuda.is_available():
        print("CUDA GPU present: Triton kernel vs torch.sparse.mm on", torch.cuda.get_device_name())
        for name in graphs:
            cuda_rows += bench_cuda(name, loaded[name], args.k, args.repeats, dtype)
        cuda_note = torch.cuda.get_device_name()
    else:
        cuda_note = "no CUDA GPU on this machine: the Triton kernels were not benchmarked"
        print(cuda_note)
    summary = {
        "min_speedup": min(r["speedup"] for r in cpu_rows),
        "min_speedup_best": min(r["speedup_best"] for r in cpu_rows),
        "min_speedup_power_law": min((r["speedup"] for r in cpu_rows if r["graph"] in POWER_LAW), default=None),
    }
    power_law = summary["min_speedup_power_law"]
    print(f"min speedup {summary['min_speedup']:.2f}x (target >= 1.0x), on power-law graphs "
          + (f"{power_law:.2f}x (target >= 1.5x)" if power_law is not None else "n/a (none benchmarked)"))
    path = write_result("local_spmm", {"isa": isa, "dtype": args.dtype, "copy_gbps": copy_gbps,
                                       "load_average": [load_before, os.getloadavg()[0]], "cpu": cpu_rows,
                                       "cuda": cuda_rows, "cuda_note": cuda_note, "summary": summary})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
