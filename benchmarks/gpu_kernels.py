"""CUDA SpMM kernels: the Triton kernel, torch.sparse.mm (cuSPARSE CSR) and backend="auto"'s choice.

    python benchmarks/gpu_kernels.py [--ks 16 32 64 128 256] [--hbm-gbs GBS] [--out PATH] [--reps 10]
    python benchmarks/gpu_kernels.py --device cpu --small      # the same code path on tiny inputs (CI)

For ego-twitter (../shared/data/graphs) and a synthetic power-law graph of about 35M nonzeros, at every
feature width K, it times the forward product ``A x B`` and the backward product ``A^T x G`` three ways:
``triton`` (the Triton kernel, on the CSR and on its cached transpose), ``cusparse`` (``torch.sparse.mm``
on a prebuilt CSR tensor of ``A`` or ``A^T``) and ``auto`` (``kernels.spmm(a, B)`` and ``a.t_matmul(G)``,
which time both once per CSR and keep the faster). It prints milliseconds (median of ``--reps`` CUDA-event
timings after warm-ups that absorb compilation and autotuning), the ratio of cuSPARSE's time to each
kernel's (above 1: faster than cuSPARSE) and each kernel's fraction of the HBM bound: the gather model,
``nnz * K * itemsize`` bytes (every nonzero reads one B row; the index, value and output bytes are left
out) over the peak bandwidth. Every kernel's result is checked against cuSPARSE's. Writes JSON to
``--out`` (default benchmarks/results/gpu_kernels.json).

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
KINDS = ("triton", "cusparse", "auto")
POWER_LAW_N = 2_700_000  # about 35M nonzeros at the generator's default mean degree 16 (after dedup)


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--small", action="store_true", help="tiny graphs (with --device cpu: the CI check)")
    p.add_argument("--ks", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--hbm-gbs", type=float, default=None, help="peak HBM GB/s (default: by device name)")
    p.add_argument("--powerlaw-n", type=int, default=POWER_LAW_N)
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


def graphs(args) -> dict[str, sp.csr_matrix]:
    from hw_models import synthetic

    if args.small:
        return {"powerlaw-small": synthetic.power_law(64, avg_degree=6.0, seed=0),
                "banded-small": synthetic.banded(40, bandwidth=4, seed=0)}
    t0 = time.perf_counter()
    ego = sp.csr_matrix(scipy.io.mmread(GRAPHS / "ego-twitter.mtx.gz"))
    ego.sum_duplicates()
    ego.sort_indices()
    t1 = time.perf_counter()
    power = synthetic.power_law(args.powerlaw_n, seed=0)
    print(f"loaded ego-twitter in {t1 - t0:.1f} s, generated power-law in {time.perf_counter() - t1:.1f} s")
    return {"ego-twitter": ego, f"powerlaw-n{args.powerlaw_n}": power}


def timer(device: torch.device, reps: int, warmup: int):
    """Median milliseconds of ``fn()``: CUDA events on a GPU, wall clock on CPU."""
    if device.type == "cuda":
        from netsparse_torch.kernels._choice import cuda_timer

        t = cuda_timer(warmup=warmup, reps=reps)
        return lambda fn: t(fn) * 1e3

    return lambda fn: median_time(fn, reps, warmup) * 1e3


def candidates(a, at_torch, a_torch, B, G) -> dict[str, dict]:
    """{direction: {kind: fn}}. ``auto`` is the public API where it chooses (CUDA); on CPU, where "auto"
    means the C++ kernel, the same choice is made through the function the CUDA dispatch calls."""
    from netsparse_torch import kernels
    from netsparse_torch.kernels import _choice, _ops

    val = a.val
    fwd = {"triton": lambda: _ops.spmm_csr("triton", a, val, B), "cusparse": lambda: torch.sparse.mm(a_torch, B)}
    bwd = {"triton": lambda: _ops.spmm_t_csr("triton", a, val, G, constant=True),
           "cusparse": lambda: torch.sparse.mm(at_torch, G)}
    if B.device.type == "cuda":
        fwd["auto"] = lambda: kernels.spmm(a, B)
        bwd["auto"] = lambda: a.t_matmul(G)
    else:
        f = _choice.auto_spmm_backend(a, "forward", B, lambda b: _ops.spmm_csr(b, a, val, B))
        b = _choice.auto_spmm_backend(a, "backward", G, lambda b: _ops.spmm_t_csr(b, a, val, G, constant=True))
        fwd["auto"] = lambda: _ops.spmm_csr(f, a, val, B)
        bwd["auto"] = lambda: _ops.spmm_t_csr(b, a, val, G, constant=True)
    return {"forward": fwd, "backward": bwd}


def to_csr(m: sp.csr_matrix, device: torch.device):
    from netsparse_torch import kernels

    crow = torch.from_numpy(m.indptr.astype(np.int64)).to(device)
    col = torch.from_numpy(m.indices.astype(np.int64)).to(device)
    val = torch.from_numpy(m.data.astype(np.float32)).to(device)
    return kernels.CSR(crow, col, val, m.shape[1])


def bench_graph(name: str, m: sp.csr_matrix, args, device: torch.device, peak_gbs: float | None) -> list[dict]:
    a = to_csr(m, device)
    t = a.transposed()
    a_torch = torch.sparse_csr_tensor(a.crow, a.col, a.val, (a.n_rows, a.n_cols))
    at_torch = torch.sparse_csr_tensor(t.crow, t.col, t.val, (t.n_rows, t.n_cols))
    time_ms = timer(device, args.reps, warmup=3 if device.type == "cuda" else 0)
    rows = []
    for k in args.ks:
        gen = torch.Generator(device=device).manual_seed(k)
        B = torch.randn(a.n_cols, k, device=device, generator=gen)
        G = torch.randn(a.n_rows, k, device=device, generator=gen)
        for direction, fns in candidates(a, at_torch, a_torch, B, G).items():
            rows.append(measure(name, a, direction, k, fns, time_ms, peak_gbs))
        del B, G
    return rows


def measure(name, a, direction, k, fns, time_ms, peak_gbs) -> dict:
    ref = fns["cusparse"]()
    scale = float(ref.abs().max()) or 1.0
    err = {kind: float((fn() - ref).abs().max()) / scale for kind, fn in fns.items() if kind != "cusparse"}
    ms = {kind: time_ms(fn) for kind, fn in fns.items()}
    bound_ms = a.nnz * k * 4 / (peak_gbs * 1e9) * 1e3 if peak_gbs else None
    row = {"graph": name, "rows": a.n_rows, "nnz": a.nnz, "direction": direction, "k": k, "ms": ms,
           "vs_cusparse": {kind: ms["cusparse"] / t for kind, t in ms.items()},
           "hbm_fraction": {kind: bound_ms / t for kind, t in ms.items()} if bound_ms else None,
           "auto_choice": a.kernel_choices().get(f"{direction}/K={k}/float32"),
           "max_rel_err_vs_cusparse": err, "ok": all(e < 1e-4 for e in err.values())}
    frac = "  ".join(f"{kind} {row['hbm_fraction'][kind]:.2f}" for kind in KINDS) if bound_ms else "-"
    print(f"{name:22s} {direction:8s} K={k:<4d} " + "  ".join(f"{kind} {ms[kind]:8.3f} ms" for kind in KINDS)
          + f"  triton/cusparse {row['vs_cusparse']['triton']:.2f}x  auto={row['auto_choice']}  HBM: {frac}"
          + ("" if row["ok"] else f"  MISMATCH {err}"))
    return row


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

        _choice.TIMER = lambda fn: timer(device, 1, 0)(fn) / 1e3
    peak_gbs, peak_source = hbm_peak(args, device)
    t0 = time.perf_counter()
    rows = [r for name, m in graphs(args).items() for r in bench_graph(name, m, args, device, peak_gbs)]
    payload = {"benchmark": "gpu_kernels", "machine": machine(), "device": str(device),
               "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (interpreter)",
               "hbm_gbs": peak_gbs, "hbm_gbs_source": peak_source,
               "bound_model": "gather: nnz * K * 4 bytes (float32) / peak HBM bandwidth",
               "command": " ".join(["python", "benchmarks/gpu_kernels.py", *(argv or sys.argv[1:])]),
               "seconds": time.perf_counter() - t0, "rows": rows}
    args.out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {args.out} ({payload['seconds']:.0f} s)")
    bad = [r for r in rows if not r["ok"]]
    if bad:
        print(f"{len(bad)} results differ from cuSPARSE: see max_rel_err_vs_cusparse in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
