"""netsparse-compare on real reports: a training multirun and simulation runs made
here by the CLIs, never hand-written JSON."""

import csv
import json
import sys
from pathlib import Path

import pytest
from conftest import DATA

KARATE = DATA / "mtx_small" / "karate.mtx"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A training multirun (strategy su,sa; 2 ranks, 2 epochs) and a simulation multirun (K = 1, 16), each
    by its CLI's ``main`` in this process (tests/cli_here.py; tests/test_sweeps.py starts them fresh)."""
    from cli_here import _here, train_cli

    from netsparse_torch.cli import simulate

    root = tmp_path_factory.mktemp("compare")
    train = train_cli(root / "run", "-m", "strategy=su,sa", "world_size=2", "epochs=2",
                      f"hydra.sweep.dir={root / 'train'}")
    assert train.returncode == 0, train.stderr[-2000:]
    sim = _here("netsparse-simulate", lambda _: simulate.main(),
                ["-m", f"matrix={KARATE}", "nodes=4", "rack_size=2", "k=1,16", "plots=false",
                 f"hydra.sweep.dir={root / 'sim'}"])
    assert sim.returncode == 0, sim.stderr[-2000:]
    return {"train": root / "train", "sim": root / "sim", "root": root}


def compare(*args: str):
    """``netsparse-compare``'s ``main`` in this process (tests/cli_here.py): its exit status and printed lines."""
    from cli_here import _here

    from netsparse_torch.cli import compare as cli

    return _here("netsparse-compare", lambda argv: sys.exit(cli.main(argv)), [str(a) for a in args])


def _table(stdout: str) -> list[list[str]]:
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in stdout.splitlines()
            if line.startswith("|")]
    return [rows[0]] + rows[2:]  # header, then the rows (without the |---| line)


def test_training_multirun_table_csv_json_and_plot(runs, tmp_path):
    out = {ext: tmp_path / f"runs.{ext}" for ext in ("csv", "json", "png")}
    proc = compare(runs["train"], "--csv", out["csv"], "--json", out["json"], "--plot", out["png"])
    assert proc.returncode == 0, proc.stderr
    head, *rows = _table(proc.stdout)
    assert head[:6] == ["dataset", "model", "strategy", "partition", "world_size", "fabric"]
    assert {"test_acc", "epoch_ms", "feature_bytes_per_epoch", "run"} <= set(head)
    assert sorted(r[head.index("strategy")] for r in rows) == ["sa", "su"]
    # Each row carries its own report's numbers.
    for r in rows:
        report = json.loads(Path(r[head.index("run")]).read_text())
        assert r[head.index("strategy")] == report["strategy"]
        assert r[head.index("feature_bytes_per_epoch")] == f"{report['comm']['feature_bytes_per_epoch']:,}"
        assert float(r[head.index("test_acc")]) == pytest.approx(report["final"]["test_acc"], rel=1e-3)
    # CSV and JSON hold the same table, with raw numbers.
    table = json.loads(out["json"].read_text())
    with open(out["csv"], newline="") as f:
        rows_csv = list(csv.DictReader(f))
    assert len(table) == len(rows_csv) == 2 and list(rows_csv[0]) == list(table[0]) == head
    for j, c in zip(table, rows_csv, strict=True):
        for key, value in j.items():
            assert c[key] == ("" if value is None else str(value)), key
    su = next(r for r in table if r["strategy"] == "su")
    report = json.loads(Path(su["run"]).read_text())
    assert su["epoch_ms"] == pytest.approx(report["epoch_time_s"]["median"] * 1e3)
    data = out["png"].read_bytes()
    assert data.startswith(PNG_MAGIC)
    import matplotlib.image

    assert matplotlib.image.imread(out["png"]).ndim == 3


def test_where_and_sort(runs):
    proc = compare(runs["train"], "--where", "strategy=sa")
    assert proc.returncode == 0, proc.stderr
    head, *rows = _table(proc.stdout)
    assert [r[head.index("strategy")] for r in rows] == ["sa"]
    for reverse in ([], ["--reverse"]):
        proc = compare(runs["train"], "--sort", "feature_bytes_per_epoch", *reverse)
        head, *rows = _table(proc.stdout)
        got = [int(r[head.index("feature_bytes_per_epoch")].replace(",", "")) for r in rows]
        assert got == sorted(got, reverse=bool(reverse))
        assert got[0] != got[-1]  # su moves more bytes than sa: the order is visible
    proc = compare(runs["train"], "--sort", "nosuch")
    assert proc.returncode == 2 and "no column 'nosuch'" in proc.stderr


def test_simulation_reports(runs, tmp_path):
    proc = compare(runs["sim"], "--json", tmp_path / "sim.json", "--plot", tmp_path / "sim.png")
    assert proc.returncode == 0, proc.stderr
    table = json.loads((tmp_path / "sim.json").read_text())
    assert sorted(r["K"] for r in table) == [1, 16]
    for row in table:
        report = json.loads(Path(row["run"]).read_text())
        assert row["matrix"] == "karate" and row["nodes"] == 4
        assert row["suopt_us"] == pytest.approx(report["strategies"]["su_opt"]["comm_time_s"] * 1e6)
        assert row["netsparse_vs_saopt"] == pytest.approx(report["speedup"]["netsparse_vs_sa_opt"])
    assert (tmp_path / "sim.png").read_bytes().startswith(PNG_MAGIC)


def test_bad_input(runs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = compare(empty)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no netsparse reports" in proc.stderr
    for name, text in (("other.json", '{"a": 1}'), ("notes.txt", "not json")):
        (tmp_path / name).write_text(text)
        proc = compare(tmp_path / name)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "is not a netsparse" in proc.stderr
    proc = compare(tmp_path / "missing")
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    # Mixed kinds: one table per kind and a note; a file output needs --kind.
    proc = compare(runs["root"])
    assert proc.returncode == 0 and "mixed report kinds (2 train, 2 simulate)" in proc.stderr
    assert "train reports:" in proc.stdout and "simulate reports:" in proc.stdout
    proc = compare(runs["root"], "--csv", tmp_path / "x.csv")
    assert proc.returncode == 2 and "--kind" in proc.stderr
    proc = compare(runs["root"], "--kind", "simulate", "--csv", tmp_path / "x.csv")
    assert proc.returncode == 0 and len((tmp_path / "x.csv").read_text().splitlines()) == 3
