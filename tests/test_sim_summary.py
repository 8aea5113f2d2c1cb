"""The netsparse-simulate summary reads without the paper: plain words with the direction of every
ratio, the paper's table in brackets, the run's own ranks per node, analogs named as such, the
ablation table when asked, and each written file once."""

from __future__ import annotations

import json

import pytest
from cli import ROOT, run_cli
from conftest import DATA
from hydra import compose, initialize_config_dir

from hw_models import analogs
from netsparse_torch.report import simulation as sim_report
from netsparse_torch.run import simulation as simulate

KARATE = DATA / "mtx_small" / "karate.mtx"


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="simulate", overrides=list(overrides))


def _row(stdout: str, label: str) -> str:
    """The value cell of the summary row whose label starts with ``label``."""
    (value,) = [line.split(" | ")[1].rstrip(" |") for line in stdout.splitlines() if line.startswith(f"| {label}")]
    return value


def _speed(ratio: float, a: str, b: str) -> str:
    """The phrase for time ratio ``ratio`` (time of b / time of a), worked out here independently."""
    return f"{a} is {ratio:.4g}x faster than {b}" if ratio > 1 else f"{a} is {1 / ratio:.4g}x slower than {b}"


@pytest.mark.parametrize(("ratio", "want"), [
    (12.3, "NetSparse is 12.3x faster than SUOpt"),
    (0.03528, "NetSparse is 28.34x slower than SUOpt"),
    (1.0, "NetSparse takes as long as SUOpt"),
    (None, "n/a"), (float("nan"), "n/a"), (0.0, "n/a"),
])
def test_speed_in_words(ratio, want):
    assert sim_report.faster(ratio, "NetSparse", "SUOpt") == want


@pytest.mark.parametrize(("ratio", "want"), [
    (776, "SUOpt moves 776x more bytes than NetSparse"),
    (0.5459, "NetSparse moves 1.832x more bytes than SUOpt"),
    (1.0, "SUOpt moves as many bytes as NetSparse"),
    (None, "n/a"),
])
def test_amounts_in_words(ratio, want):
    assert sim_report.more(ratio, "SUOpt", "NetSparse", "moves", "bytes") == want


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """The CLI on karate with the ablation, 8 SAOpt ranks per node, and report_path naming the run
    directory's own report.json (that file used to be announced twice)."""
    run_dir = tmp_path_factory.mktemp("sim")
    proc = run_cli("netsparse_torch.cli.simulate", f"matrix={KARATE}", "nodes=4", "rack_size=2", "ablation=true",
                   "+hw.software.cores=8", f"hydra.run.dir={run_dir}", f"report_path={run_dir / 'report.json'}",
                   timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, json.loads((run_dir / "report.json").read_text()), run_dir


def test_each_written_file_is_announced_once(cli_run):
    stdout, _, run_dir = cli_run
    written = [line.split()[-1] for line in stdout.splitlines() if line.startswith("  written ")]
    assert sorted(written) == sorted(str(run_dir / n) for n in ("report.json", "speedup.png", "ablation.png",
                                                                "active_nodes.png", "critical_path.png",
                                                                "report.breakdown.csv"))


def test_ranks_per_node_come_from_the_run(cli_run):
    stdout, report, _ = cli_run
    assert report["config"]["hw"]["software"]["cores"] == 8 and report["strategies"]["sa_opt"]["cores"] == 8
    assert _row(stdout, "SAOpt ranks").startswith("8 per node x 4 nodes = 32; ")
    assert "64" not in _row(stdout, "SAOpt ranks")


def test_the_summary_names_the_assumptions_it_read_with(cli_run):
    stdout, report, _ = cli_run
    hw, tail = report["hardware"], report["strategies"]["netsparse"]["tail"]
    assert hw["software"]["rank_partition"] == "rows"
    assert "split among them by equal rows" in _row(stdout, "SAOpt ranks")
    assert hw["link"]["line_util_direction"] == "rx"
    assert _row(stdout, "line utilisation at the tail node") == \
        f"{100 * tail['line_util']:.4g} % (received bytes, hw.link.line_util_direction)"


def test_ratios_read_with_their_direction(cli_run):
    stdout, report, _ = cli_run
    sp, tail = report["speedup"], report["strategies"]["netsparse"]["tail"]
    assert _row(stdout, "speed, SAOpt vs SUOpt") == _speed(sp["sa_opt_vs_su_opt"], "SAOpt", "SUOpt")
    assert _row(stdout, "speed, NetSparse vs SUOpt") == _speed(sp["netsparse_vs_su_opt"], "NetSparse", "SUOpt")
    assert _row(stdout, "speed, NetSparse vs SAOpt") == _speed(sp["netsparse_vs_sa_opt"], "NetSparse", "SAOpt")
    traffic = tail["traffic_reduction_vs_su_opt"]  # SUOpt bytes / NetSparse bytes into the tail node
    bigger, smaller = ("SUOpt", "NetSparse") if traffic > 1 else ("NetSparse", "SUOpt")
    assert _row(stdout, "traffic into the tail node [Table 7]") == \
        f"{bigger} moves {max(traffic, 1 / traffic):.4g}x more bytes than {smaller}"
    # the paper's abbreviations and bare ratios are gone; its tables are named in brackets
    for old in ("Trfc", "#PR", "Gput", "speedup SAOpt vs SUOpt", "(Table 1)", "(Table 7)"):
        assert old not in stdout, old
    for ref in ("[Table 1]", "[Table 3]", "[Table 4]", "[Table 7]", "[Table 8]"):
        assert ref in stdout, ref


def test_the_tail_bound_is_named_in_plain_words(cli_run):
    """The summary names what held the tail node up, largest first, with its share of the tail's time
    worked out here from the report's breakdown (groups: the four idx-scan kinds, the filter loads)."""
    stdout, report, _ = cli_run
    ns = report["strategies"]["netsparse"]
    b, node = ns["tail"]["breakdown_s"], ns["tail_node"]
    assert sum(b.values()) == pytest.approx(ns["comm_time_s"], rel=1e-12)
    assert ns["tail"]["bound"] == max(b, key=b.__getitem__)
    scan = sum(v for k, v in b.items() if k.startswith("scan_"))
    loads = sum(v for k, v in b.items() if k.startswith("filter_"))
    shares = {"the RIG client idx scan": scan, "Idx Filter loads": loads,
              **{sim_report.breakdown.WORDS[k]: v for k, v in b.items() if not k.startswith(("scan_", "filter_"))}}
    first = max(shares, key=shares.__getitem__)
    row = _row(stdout, "what bounds the tail node")
    assert row.startswith(f"tail node {node} is bound by {first} ({100 * shares[first] / sum(b.values()):.0f} %)")
    assert _row(stdout, "busiest ToR middle pipe").startswith("switch ")


def test_ablation_prints_its_table(cli_run):
    stdout, report, _ = cli_run
    lines = stdout.splitlines()
    head = lines.index("| mechanisms | speed | traffic, all nodes | goodput at the tail node |")
    rows = [line.split(" | ") for line in lines[head + 2: head + 2 + len(report["ablation"])]]
    assert [r[0].lstrip("| ") for r in rows] == ["rig", "+filter", "+coalesce", "+concat_nic", "+switch"]
    for row, stage in zip(rows, report["ablation"], strict=True):
        assert row[1] == _speed(stage["speedup_vs_su_opt"], "NetSparse", "SUOpt")
        assert row[3].rstrip(" |") == f"{100 * stage['goodput']:.4g} %"
    assert "Skipped: the Table 8 ablation" not in stdout


def test_paper_analog_is_labelled_in_report_and_summary(tmp_path, capsys):
    label = "synthetic analog of Queen_4147 at scale 0.0005 (calibrated to Tables 1, 4, 6)"
    assert analogs.label("paper:queen@0.0005") == label
    assert analogs.label("paper:arabic") == "synthetic analog of arabic-2005 (calibrated to Tables 1, 4, 6)"
    report = simulate.run(_cfg("matrix=paper:queen@0.0005", "nodes=16", "plots=false"), tmp_path)
    assert report["matrix"]["label"] == label and report["matrix"]["name"] == "paper-queen@0.0005"
    assert json.loads((tmp_path / "report.json").read_text())["matrix"]["label"] == label
    heading = capsys.readouterr().out.splitlines()[0]
    assert heading.startswith(f"### paper-queen@0.0005, a {label}: 2,074 x 2,074")


def test_a_real_matrix_has_no_analog_label(cli_run):
    stdout, report, _ = cli_run
    (heading,) = [line for line in stdout.splitlines() if line.startswith("###")]
    assert "label" not in report["matrix"] and heading.startswith("### karate: 34 x 34, 156 nnz on 4 nodes")


def test_write_json_writes_and_returns_each_file_once(tmp_path):
    from netsparse_torch.report import write_json

    p = tmp_path / "report.json"
    other = tmp_path / "sweep" / "a.json"
    same = tmp_path / "sweep" / ".." / "report.json"  # the run directory's report, spelled another way
    assert write_json({"x": 1}, p, None, str(p), other, same) == [p, other]
    assert json.loads(other.read_text()) == json.loads(p.read_text()) == {"x": 1}


def test_write_json_says_which_path_failed_and_where_the_report_is(tmp_path):
    from netsparse_torch.errors import ConfigError
    from netsparse_torch.report import write_json

    good = tmp_path / "report.json"
    (tmp_path / "a_file").write_text("")
    bad = tmp_path / "a_file" / "r.json"
    with pytest.raises(ConfigError, match=rf"^cannot write the report to {bad}: .+; the report is in {good}$"):
        write_json({"x": 1}, good, bad)
    assert json.loads(good.read_text()) == {"x": 1}
