"""Markdown pipe tables: the one writer of every table the reports, CLIs and paper tools print.

A leaf (standard library only), so the torch-free modeling tools in ``hw_models`` use it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

RULES = {"-": "---", "l": ":---", "r": "---:", "c": ":---:"}
"""The separator cell of each ``align`` letter: none, left, right, centre."""


def row(cells: Iterable) -> str:
    """One table line, ``| a | b |`` (each cell written with ``str``)."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(headers: Sequence, rows: Iterable[Sequence], align: str | None = None) -> list[str]:
    """The lines of a Markdown table: the header, the separator and one line per row.

    ``align`` has one letter of ``-lrc`` per column (no alignment, left, right, centre); the default is
    no alignment for every column. A row with another number of cells than ``headers`` is an error.
    """
    align = "-" * len(headers) if align is None else align
    if len(align) != len(headers) or not set(align) <= set(RULES):
        raise ValueError(f"align {align!r} needs one of {''.join(RULES)!r} per column ({len(headers)})")
    lines = [row(headers), "|" + "".join(RULES[a] + "|" for a in align)]
    for cells in rows:
        cells = list(cells)
        if len(cells) != len(headers):
            raise ValueError(f"a row of {len(cells)} cells under {len(headers)} headers: {cells}")
        lines.append(row(cells))
    return lines
