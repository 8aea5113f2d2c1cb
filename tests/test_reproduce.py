"""netsparse-reproduce: the tables the CLI prints match the paper numbers typed here from the papers' tables."""

import json
import subprocess
import sys

import pytest

from hw_models import paper_tables as tables
from netsparse_torch.cli import reproduce as rp

NETCRAFTER_TABLE1 = [  # occupied, needed, padding, flits (16 B flits)
    16, 12, 4, 1,   # Read Req
    80, 76, 4, 5,   # Write Req
    16, 12, 4, 1,   # Page Table Req
    80, 68, 12, 5,  # Read Rsp
    16, 4, 12, 1,   # Write Rsp
    16, 12, 4, 1,   # Page Table Rsp
]
NETSPARSE_TABLE3 = [97.6, 95.2, 90.9, 83.3, 71.4, 55.6, 38.5, 23.8, 13.5]  # K = 1, 2, 4, ..., 256
BF3_TABLE2 = [16, 13, 7.5, 19, 16.3, 9.3, 20, 17, 9.5]  # k = 4.33, 3.28, 3.21 x c = 15, 30, 60 %


def test_netsparse_table3_exact_to_the_printed_digit():
    rows = tables.reproduce("netsparse_table3")
    assert [r.key for r in rows] == [f"K={k}" for k in (1, 2, 4, 8, 16, 32, 64, 128, 256)]
    assert [r.paper for r in rows] == NETSPARSE_TABLE3
    assert [round(r.ours, 1) for r in rows] == NETSPARSE_TABLE3


def test_netsparse_header_formula():
    rows = tables.reproduce("netsparse_header_formula")
    assert len(rows) == 128  # N = 1..64, separate and concatenated
    by_key = {r.key: r for r in rows}
    # Hand-computed with Table 5 sizes (50 + 12 + 18 B per single-PR packet; 50 + 12 + 18 N concatenated).
    for key, value in [("N=1 separate", 80), ("N=1 concatenated", 80), ("N=2 separate", 160),
                       ("N=2 concatenated", 98), ("N=64 separate", 5120), ("N=64 concatenated", 1214)]:
        assert by_key[key].paper == value and by_key[key].ours == value
    assert all(r.ours == r.paper for r in rows)


def test_netcrafter_table1_exact():
    rows = tables.reproduce("netcrafter_table1")
    assert [r.paper for r in rows] == NETCRAFTER_TABLE1
    assert [r.ours for r in rows] == NETCRAFTER_TABLE1
    assert rows[0].key == "Read Req occupied" and rows[-1].key == "Page Table Rsp flits"


def test_bf3_table2_within_one_point():
    rows = tables.reproduce("bf3_table2")
    assert [r.paper for r in rows] == BF3_TABLE2
    for r, paper in zip(rows, BF3_TABLE2, strict=True):
        assert abs(r.ours - paper) <= 1.0, r


def test_every_listed_table_runs_within_its_tolerance():
    for name in tables.names():
        rows = tables.reproduce(name)
        assert rows, name
        assert max(abs(r.deviation) for r in rows) <= tables.TABLES[name].tolerance + 1e-9, name


def test_json_output(capsys):
    assert rp.main(["bf3_table2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "bf3_table2"
    assert [r["paper"] for r in out["rows"]] == BF3_TABLE2
    assert set(out["rows"][0]) == {"key", "paper", "ours"}


def test_list_and_table_text(capsys):
    assert rp.main(["list"]) == 0
    listed = capsys.readouterr().out
    for name in ("netsparse_table3", "netsparse_header_formula", "netcrafter_table1", "bf3_table2"):
        assert name in listed
    assert rp.main(["netcrafter_table1"]) == 0
    assert "within tolerance" in capsys.readouterr().out


def test_unknown_name_exits_2(capsys):
    with pytest.raises(SystemExit) as done:
        rp.main(["no_such_table"])
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith("netsparse-reproduce: error: unknown table 'no_such_table'")
    with pytest.raises(ValueError, match="known tables"):
        tables.reproduce("no_such_table")


def test_module_cli():
    p = subprocess.run([sys.executable, "-m", "netsparse_torch.cli.reproduce", "bf3_table2", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["name"] == "bf3_table2"
    p = subprocess.run([sys.executable, "-m", "netsparse_torch.cli.reproduce", "bogus"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and "unknown table" in p.stderr


def test_a_closed_pipe_is_not_a_traceback():
    """``netsparse-reproduce ... | head``: the reader is gone before the table is printed."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "netsparse_torch.cli.reproduce", "netsparse_table3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err
