"""The calibration fit recovers known coefficients from synthetic timings (within 5%)."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from hw_models.twoface import Coefficients
from hw_models.twoface.cost import CostModel
from netsparse_torch.calibration import ASYNC_GRID, COMP_GRID, SYNC_GRID, calibrate_cpu, fit, overlap_of
from netsparse_torch.cli.calibrate import fit_warning

TRUE = Coefficients(beta_s=3.0e-10, alpha_s=2.0e-6, beta_a=5.0e-9, alpha_a=1.5e-5, gamma_a=1.0e-8,
                    kappa_a=4.0e-6)


def synthetic(noise: float, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    c = TRUE

    def jitter(t):
        return t * (1 + noise * rng.standard_normal())

    return {
        "sync": [(k, w, s, jitter(s * (c.beta_s * k * w + c.alpha_s))) for k, w, s in SYNC_GRID],
        "async": [(k, n, s, jitter(c.beta_a * k * n + c.alpha_a * s)) for k, n, s in ASYNC_GRID],
        "comp": [(k, n, s, jitter(c.gamma_a * k * n + c.kappa_a * s)) for k, n, s in COMP_GRID],
    }


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_fit_recovers_known_coefficients(noise):
    got, errors = fit(synthetic(noise))
    for name, want in TRUE.to_dict().items():
        assert abs(getattr(got, name) - want) <= 0.05 * want, name
    assert all(e <= noise * 3 + 1e-9 for e in errors.values())


def test_fit_rejects_missing_timings():
    data = synthetic(0.0)
    data["comp"] = data["comp"][:1]
    with pytest.raises(ValueError, match="'comp'"):
        fit(data)


@pytest.mark.parametrize("both, want", [(10.0, "max"), (12.9, "max"), (13.0, "sum"), (16.0, "sum")])
def test_overlap_decision_by_hand(both, want):
    # sync alone 10, async alone 6: fully overlapped = 10, serial = 16; halfway is 13.
    probe = {"sync_s": 10.0, "async_s": 6.0, "both_s": both, "serial_fraction": (both - 10.0) / 6.0}
    assert overlap_of(probe) == want


def test_calibrate_writes_where_told_and_says_how_to_use_it(tmp_path):
    from cli import run_cli

    out = tmp_path / "mine" / "tf.json"
    proc = run_cli("netsparse_torch.cli.calibrate", "--out", str(out), "--repeats", "1", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    profile = json.loads(out.read_text())
    assert profile["overlap"] in ("max", "sum") and set(profile["overlap_probe"]) >= {"sync_s", "async_s", "both_s"}
    assert f"use it: netsparse-train strategy=twoface strategy.profile={out}" in proc.stdout
    model = CostModel.resolve(out)  # the file strategy=twoface reads, with the overlap it measured
    assert model.overlap == profile["overlap"] and model.source == str(out)


def test_calibrate_cpu_times_the_project_kernel(monkeypatch):
    from netsparse_torch import kernels

    calls = []
    real = kernels.spmm
    monkeypatch.setattr(kernels, "spmm", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    a = sp.random(300, 300, density=0.05, random_state=1, format="csr")
    m = calibrate_cpu(a, k=8, repeats=3)
    assert len(calls) == 4  # one warm-up and three timed runs
    assert m.nnz_k_per_s > 0 and "kernels.spmm" in m.source and f"nnz={a.nnz}" in m.source


def test_a_loose_fit_is_one_warning_line():
    """Above 20 % relative RMS error the profile is named as suspect (a 45-56 % fit must not pass silently)."""
    assert fit_warning({"sync": 0.05, "async": 0.19, "comp": 0.2}) is None
    line = fit_warning({"sync": 0.45, "async": 0.10, "comp": 0.56})
    assert "sync 45%" in line and "comp 56%" in line and "async" not in line and "\n" not in line
