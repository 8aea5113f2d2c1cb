"""Each rank's torch threads can be set and are reported (``threads=``, netsparse_torch/run/threads.py):
the launcher used to set cores // world_size and drop OMP_NUM_THREADS, and no report said how many
threads a rank ran, so an epoch time at world_size=1 (every core) and at 2 could not be compared."""

import os

import pytest
from cli import run_cli, train_here

from netsparse_torch.config_check import check_threads
from netsparse_torch.errors import ConfigError
from netsparse_torch.run.threads import Threads, resolve_threads

GRAPH = ["dataset=synthetic", "dataset.num_nodes=300", "dataset.num_features=8", "dataset.num_classes=3",
         "epochs=1", "hidden=4", "world_size=2"]


@pytest.mark.parametrize("setting, environ, cores, want", [
    ("auto", {}, 8, Threads(4, "auto")),  # cores / local ranks
    ("auto", {}, 1, Threads(1, "auto")),  # at least one
    ("auto", {"OMP_NUM_THREADS": "3"}, 8, Threads(3, "OMP_NUM_THREADS")),  # OMP_NUM_THREADS wins over auto
    (5, {"OMP_NUM_THREADS": "3"}, 8, Threads(5, "threads")),  # the key wins over both
])
def test_where_the_thread_count_comes_from(setting, environ, cores, want):
    assert resolve_threads(setting, 2, environ, cores=cores) == want


@pytest.mark.parametrize("setting", [0, -1, "x", True, 1.5])
def test_a_bad_threads_value_is_one_error(setting):
    with pytest.raises(ConfigError, match=r"^threads must be auto or an integer >= 1, got "):
        check_threads(setting)


@pytest.mark.parametrize("omp", ["abc", "0", "-2"])
def test_a_bad_omp_num_threads_is_one_error(omp):
    with pytest.raises(ConfigError, match=r"^OMP_NUM_THREADS must be a whole number >= 1, got "):
        resolve_threads("auto", 2, {"OMP_NUM_THREADS": omp})


def test_ranks_honour_omp_num_threads_and_report_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    report, printed = train_here(tmp_path, *GRAPH)
    assert [(r["threads"], r["threads_source"]) for r in report["per_rank"]] == [(2, "OMP_NUM_THREADS")] * 2
    assert "  threads      torch threads per rank [2, 2] (from OMP_NUM_THREADS)" in printed.splitlines()


def test_the_threads_key_wins_and_auto_divides_the_cores(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    report, printed = train_here(tmp_path / "key", *GRAPH, "threads=3")
    assert [(r["threads"], r["threads_source"]) for r in report["per_rank"]] == [(3, "threads")] * 2
    assert "(set by the threads key)" in printed
    monkeypatch.delenv("OMP_NUM_THREADS")
    report, _ = train_here(tmp_path / "auto", *GRAPH)
    per_rank = max(1, len(os.sched_getaffinity(0)) // 2)
    assert [(r["threads"], r["threads_source"]) for r in report["per_rank"]] == [(per_rank, "auto")] * 2


@pytest.mark.parametrize("omp, args, line", [
    (None, ["threads=0"], "netsparse-train: error: threads must be auto or an integer >= 1, got 0"),
    ("abc", [], "netsparse-train: error: OMP_NUM_THREADS must be a whole number >= 1, got 'abc': fix it, or unset it"),
])
def test_cli_bad_threads_is_one_line_exit_2(tmp_path, monkeypatch, omp, args, line):
    """A bad OMP_NUM_THREADS is refused before torch loads: libgomp would add its own line."""
    if omp is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    proc = run_cli("netsparse_torch.cli.train", *args, f"hydra.run.dir={tmp_path}", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [line]
