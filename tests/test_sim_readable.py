"""The simulator's output reads without the paper: every term explained once (--explain, and the same
table in docs/simulator.md), numbers in fixed notation, no line of zeros, figures titled with the matrix,
K and cluster, resources in at most eight plain groups with the legend off the data, legends that name
what differs between curves, the whole breakdown as CSV, and compare's bars on a log axis across decades."""

from __future__ import annotations

import csv
import json
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from cli import ROOT, run_cli  # noqa: E402
from conftest import DATA  # noqa: E402
from figures import record_figures  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

from hw_models import breakdown  # noqa: E402
from netsparse_torch.report import collect, compare, sim_figures  # noqa: E402
from netsparse_torch.report import simulation as sim_report  # noqa: E402
from netsparse_torch.report.glossary import GLOSSARY, glossary_table  # noqa: E402
from netsparse_torch.run import simulation as simulate  # noqa: E402

KARATE = DATA / "mtx_small" / "karate.mtx"
SMALL = [f"matrix={KARATE}", "nodes=4", "rack_size=2"]


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="simulate", overrides=list(overrides))


@pytest.fixture
def drawn(monkeypatch) -> dict:
    """``{file name: (fig, axes)}`` of every figure saved (the very Figure written)."""
    return record_figures(monkeypatch, (sim_figures, collect, compare))


# -- terms -------------------------------------------------------------------------------------------
def test_explain_prints_every_term_and_runs_nothing(tmp_path):
    proc = run_cli("netsparse_torch.cli.simulate", "--explain", f"hydra.run.dir={tmp_path}", timeout=60)
    assert proc.returncode == 0, proc.stderr
    for term, meaning in GLOSSARY.items():
        assert re.search(rf"^  {re.escape(term)} +{re.escape(meaning[:40])}", proc.stdout, re.M), term
    assert not (tmp_path / "report.json").exists()


def test_docs_hold_the_same_terms():
    doc = (ROOT / "docs" / "simulator.md").read_text()
    table = "\n".join(glossary_table())
    assert table in doc


# Words of the summary that a reader without the paper would not know: each is in the glossary.
JARGON = {"PR": "PR", "RIG": "RIG", "Idx Filter": "Idx Filter", "Pending PR Table": "Pending PR Table",
          "middle pipe": "middle pipe", "SUOpt": "SUOpt", "SAOpt": "SAOpt", "goodput": "goodput (Gput)",
          "tail node": "tail node", "critical path": "critical path", "ToR": "ToR", "SNIC": "SNIC",
          "line utilisation": "line utilisation", "ablation": "ablation", "property cache": "property cache"}


def test_every_term_of_the_summary_is_explained(capsys):
    simulate.run(_cfg(*SMALL, "plots=false", "ablation=true"))
    out = capsys.readouterr().out
    for word, term in JARGON.items():
        if re.search(rf"\b{re.escape(word)}\b", out):
            assert term in GLOSSARY, word
    assert out.splitlines()[-1].startswith("Terms (PR, RIG, ") and "netsparse-simulate --explain" in out  # footer


# -- numbers and lines -------------------------------------------------------------------------------
@pytest.mark.parametrize("x, text", [(64660.3, "64,660"), (8.7, "8.7"), (1234.5, "1234"), (0.5459, "0.5459"),
                                     (3.4e-5, "0.000034"), (-12345.0, "-12,345"), (0.0, "0")])
def test_numbers_have_no_exponent(x, text):
    assert sim_report.fixed(x) == text
    assert "e" not in sim_report._fmt(x * 1e3, " us")


def test_a_line_of_zeros_is_dropped():
    zeros = {r: 0.0 for r in breakdown.WORDS} | {"switch_links": 1e-6}
    ns = {"tail_node": 3, "tail": {"breakdown_s": zeros}}
    assert [label for label, _ in sim_report._bound_rows(ns)] == ["what bounds the tail node (its critical path)"]
    ns["tail"]["breakdown_s"] = zeros | {"scan_issued": 1e-6}
    assert "its RIG client idx scan, by idx" in [label for label, _ in sim_report._bound_rows(ns)]


# -- figures and the CSV -----------------------------------------------------------------------------
def test_figures_are_titled_grouped_and_their_legend_is_off_the_data(tmp_path, drawn):
    report = simulate.run(_cfg(*SMALL, "ablation=true", "kernel=sddmm", "k=8"), tmp_path)
    assert {"speedup.png", "ablation.png", "active_nodes.png", "critical_path.png"} <= set(drawn)
    for name, (_, ax) in drawn.items():
        assert ax.get_title() == "karate, sddmm K=8, 4 nodes leafspine", name
    fig, ax = drawn["critical_path.png"]
    labels = [c.get_label() for c in ax.collections]
    assert set(labels) <= set(sim_figures.PLOT_GROUPS) and len(sim_figures.PLOT_GROUPS) <= 8
    assert len({tuple(c.get_facecolor()[0]) for c in ax.collections}) == len(labels)  # distinct colours
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    assert ax.get_legend().get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1  # right of the data
    grouped = {r for members in sim_figures.PLOT_GROUPS.values() for r in members}
    assert grouped == set(breakdown.WORDS)  # every resource in exactly one group
    assert sum(len(m) for m in sim_figures.PLOT_GROUPS.values()) == len(breakdown.WORDS)
    assert report["k"] == 8


def test_the_whole_breakdown_is_written_as_csv(tmp_path):
    report = simulate.run(_cfg(*SMALL, "plots=false"), tmp_path)
    with open(tmp_path / "report.breakdown.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    per = report["strategies"]["netsparse"]["per_node"]
    assert len(rows) == len(per["time_s"]) == 4
    for node, row in enumerate(rows):
        assert int(row["node"]) == node and row["bound"] == per["bound"][node]
        assert float(row["time_us"]) == pytest.approx(per["time_s"][node] * 1e6, rel=1e-8)
        parts = [float(row[f"{r}_us"]) for r in per["breakdown_s"]]
        assert parts == pytest.approx([per["breakdown_s"][r][node] * 1e6 for r in per["breakdown_s"]], rel=1e-8)
        assert sum(parts) == pytest.approx(float(row["time_us"]), rel=1e-9)  # the resources sum to the node's time


def test_active_nodes_legend_names_the_swept_key(tmp_path, drawn):
    """Runs that differ only in a swept key (rig_units 4-32) need legend entries that tell them apart."""
    for units in (4, 8):
        simulate.run(_cfg(*SMALL, "plots=false", f"report_dir={tmp_path}", f"rig_units={units}", f"tag=_u{units}"))
    reports = collect.load_reports(tmp_path)
    collect.plot("active_nodes", reports, tmp_path / "active.png")
    _, ax = drawn["active.png"]
    assert [ln.get_label() for ln in ax.get_lines()] == ["karate K=16, rig_units=4", "karate K=16, rig_units=8"]


def test_compare_plot_spans_decades_on_a_log_axis_and_shows_defaulted_values(tmp_path, drawn):
    simulate.run(_cfg(*SMALL, "plots=false"), tmp_path / "a")
    simulate.run(_cfg(*SMALL, "plots=false", "+hw.snic.rig_units=8"), tmp_path / "b")
    rows = compare.table("simulate", compare.find_reports([tmp_path]))
    assert sorted(r["hw.snic.rig_units"] for r in rows) == [8, 32]  # the default run's is its actual 32, not n/a
    compare.plot("simulate", rows, tmp_path / "runs.png")
    _, axes = drawn["runs.png"]
    times = [p.get_height() for c in axes[0].containers for p in c if p.get_height() > 0]
    assert max(times) / min(times) > 10 and axes[0].get_yscale() == "log"
    assert compare.spans_decades({"a": [1.0, 5.0]}) is False and compare.spans_decades({"a": [1.0, 0.0, 50.0]})


def test_collect_of_old_reports_without_config_still_reads(tmp_path):
    report = simulate.run(_cfg(*SMALL, "plots=false"))
    report.pop("config")
    (tmp_path / "x.json").write_text(json.dumps(report, default=str))
    assert collect.markdown("speedup", collect.load_reports(tmp_path))[2].startswith("| karate | 4 | leafspine | 16 |")
