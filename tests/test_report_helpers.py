"""The one Markdown table writer and the one figure helper every report uses (netsparse_torch.report)."""

import pytest

from netsparse_torch.report.markdown import table
from netsparse_torch.report.plots import figure


def test_table_by_hand():
    assert table(["matrix", "nodes", "speedup"], [["karate", 4, 1.5], ("cage11", 128, None)]) == [
        "| matrix | nodes | speedup |",
        "|---|---|---|",
        "| karate | 4 | 1.5 |",
        "| cage11 | 128 | None |",
    ]


def test_table_alignment_and_no_rows():
    assert table(["graph", "pull", "push"], [], align="lrc") == ["| graph | pull | push |", "|:---|---:|:---:|"]
    assert table(["a", "b"], iter([["x", "y"]]), align="-r")[1] == "|---|---:|"


@pytest.mark.parametrize("headers, rows, align", [(["a", "b"], [["only one"]], None),
                                                   (["a", "b"], [["x", "y", "z"]], None),
                                                   (["a", "b"], [], "r"), (["a"], [], "x")])
def test_table_rejects_ragged_rows_and_bad_alignment(headers, rows, align):
    with pytest.raises(ValueError):
        table(headers, rows, align)


def test_figure_writes_and_closes(tmp_path):
    import matplotlib.pyplot as plt

    with figure(tmp_path / "a.png", ncols=2, figsize=(4, 2)) as (fig, axes):
        axes[0].plot([0, 1], [1, 0])
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not plt.get_fignums()
    with pytest.raises(RuntimeError), figure(tmp_path / "b.png") as (fig, ax):
        raise RuntimeError("drawing failed")
    assert not (tmp_path / "b.png").exists() and not plt.get_fignums()
