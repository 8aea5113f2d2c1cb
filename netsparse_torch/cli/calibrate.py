"""``netsparse-calibrate``: measure this machine's Two-Face coefficients and write a profile.

    netsparse-calibrate [--out PROFILE.json] [--repeats 5]
    netsparse-train strategy=twoface strategy.profile=PROFILE.json

Two ranks on loopback time the synchronous and asynchronous exchanges and the local SpMM
(:mod:`netsparse_torch.calibration`), fit Two-Face's cost coefficients, and probe whether this host
overlaps communication with computation.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from hw_models.files import check_writable
from hw_models.twoface.cost import Coefficients
from netsparse_torch.calibration import OVERLAP_PROBE, fit, measure, overlap_of
from netsparse_torch.cli.failure import fail, failing


def default_out() -> Path:
    """This run's directory, laid out as Hydra lays out the other CLIs' runs."""
    return Path("outputs") / "calibrate" / datetime.now().strftime("%Y-%m-%d/%H-%M-%S") / "twoface_profile.json"


#: A fit whose relative RMS error exceeds this describes the machine too loosely to drive the stripe
#: classification (our assumption: Two-Face reports its fits without an error bound).
FIT_WARN = 0.20


def fit_warning(errors: dict[str, float]) -> str | None:
    """One line naming the coefficient pairs whose fit error exceeds :data:`FIT_WARN` (None when all fit)."""
    bad = {k: v for k, v in errors.items() if v > FIT_WARN}
    if not bad:
        return None
    worst = ", ".join(f"{k} {v:.0%}" for k, v in bad.items())
    return (f"netsparse-calibrate: warning: fit error above {FIT_WARN:.0%} ({worst}): the machine was probably "
            "busy or the samples too short; rerun on a quiet machine or with --repeats 10 before using this profile")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="netsparse-calibrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None,
                    help="the JSON profile to write (default: outputs/calibrate/<date>/<time>/twoface_profile.json)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    from netsparse_torch.run.launch import launch

    if args.repeats < 1:
        fail(ap.prog, f"--repeats must be >= 1, got {args.repeats}")
    out = args.out or default_out()
    with failing(ap.prog, ValueError):
        check_writable(out, "--out")  # before the measurements, not after them
        samples = launch(measure, 2, (args.repeats,), timeout_s=600)
        probe = samples.pop("overlap")
        coeffs, errors = fit(samples)
        overlap = overlap_of(probe)
        path = coeffs.save(out, {"overlap": overlap, "overlap_probe": {**OVERLAP_PROBE, **probe},
                                 "fit_rel_rms_error": errors, "backend": "gloo", "samples": samples}).resolve()
    for name, value in coeffs.to_dict().items():
        print(f"  {name:8s} = {value:.3e}   (Two-Face Table 3: {getattr(Coefficients(), name):.3e})")
    print("  fit error (relative RMS): " + ", ".join(f"{k} {v:.1%}" for k, v in errors.items()))
    warning = fit_warning(errors)
    if warning:
        print(warning, file=sys.stderr)
    print(f"  overlap  = {overlap}   (sync alone {probe['sync_s'] * 1e3:.2f} ms, async alone "
          f"{probe['async_s'] * 1e3:.2f} ms, both together {probe['both_s'] * 1e3:.2f} ms: "
          f"{probe['serial_fraction']:.0%} of the shorter one not hidden)")
    print(f"wrote {path}")
    print(f"use it: netsparse-train strategy=twoface strategy.profile={path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
