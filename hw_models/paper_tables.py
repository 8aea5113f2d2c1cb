"""Every paper table the models reproduce exactly, paper value against ours, one row per table cell
in reading order (row by row, left to right); percentages are in percent. ``netsparse-reproduce``
(:mod:`netsparse_torch.cli.reproduce`) prints them; tests call :func:`reproduce`, the same function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One table cell: the paper's number and ours."""

    key: str
    paper: float
    ours: float

    @property
    def deviation(self) -> float:
        """ours - paper, in the table's unit."""
        return self.ours - self.paper


@dataclass(frozen=True)
class Table:
    """A reproducible table: what it is, the tolerance we claim, and how to compute it."""

    description: str
    tolerance: float
    rows: Callable[[], list[Row]]


# The paper values, typed from the papers' tables.
NETCRAFTER_TABLE1 = {  # NetCrafter Table 1 (16 B flits): occupied, needed, padding, flits
    "Read Req": (16, 12, 4, 1),
    "Write Req": (80, 76, 4, 5),
    "Page Table Req": (16, 12, 4, 1),
    "Read Rsp": (80, 68, 12, 5),
    "Write Rsp": (16, 4, 12, 1),
    "Page Table Rsp": (16, 12, 4, 1),
}
NETSPARSE_TABLE3 = {  # NetSparse Table 3: header share (%) of SA traffic, K four-byte elements per property
    1: 97.6, 2: 95.2, 4: 90.9, 8: 83.3, 16: 71.4, 32: 55.6, 64: 38.5, 128: 23.8, 256: 13.5,
}
TABLE5_SIZES = (50, 12, 18)  # NetSparse Table 5: upper layers, concatenation header, PR header (bytes)
BF3_TABLE2 = {  # BF3 paper Table 2: max improvement (%) for slowdown k (rows) x transfer share c (columns)
    4.33: (16.0, 13.0, 7.5),
    3.28: (19.0, 16.3, 9.3),
    3.21: (20.0, 17.0, 9.5),
}


def _netcrafter_table1() -> list[Row]:
    from hw_models.seeds import netcrafter

    rows = []
    for ours in netcrafter.table1(16):
        paper = NETCRAFTER_TABLE1[str(ours["type"])]
        for col, p in zip(("occupied", "needed", "padding", "flits"), paper, strict=True):
            rows.append(Row(f"{ours['type']} {col}", float(p), float(ours[col])))
    return rows


def _netsparse_table3() -> list[Row]:
    from hw_models import unit_args, units

    sizes = units.HeaderSizes(**unit_args.header_sizes())
    return [Row(f"K={k}", paper, 100.0 * units.sa_header_share(sizes, k, 4)) for k, paper in NETSPARSE_TABLE3.items()]


def _netsparse_header_formula() -> list[Row]:
    """§6.1.1 header bytes of N PRs: the formula with Table 5 sizes ("paper") vs the C++ header model ("ours")."""
    import numpy as np

    from hw_models import unit_args, units

    upper, concat, pr = TABLE5_SIZES
    sizes = units.HeaderSizes(**unit_args.header_sizes())
    rows = []
    for n in range(1, 65):
        separate, _ = units.stream_bytes(sizes, np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.uint8), 4)
        concatenated, _ = units.packet_bytes(sizes, n, False, 4)
        rows.append(Row(f"N={n} separate", n * (upper + concat + pr), separate))
        rows.append(Row(f"N={n} concatenated", upper + concat + n * pr, concatenated))
    return rows


def _bf3_table2() -> list[Row]:
    from hw_models.seeds import bf3

    rows = []
    for k, c, ours in bf3.table2():
        paper = BF3_TABLE2[k][bf3.TABLE2_TRANSFER_SHARES.index(c)]
        rows.append(Row(f"k={k} c={round(100 * c)}%", paper, ours))
    return rows


TABLES: dict[str, Table] = {
    "netsparse_table3": Table("NetSparse Table 3: header share (%) of SA traffic for K = 1..256 (Table 5 sizes)",
                              0.05, _netsparse_table3),
    "netsparse_header_formula": Table("NetSparse §6.1.1: header bytes of N PRs, separate vs concatenated, "
                                      "N = 1..64 (Table 5 sizes)", 0.0, _netsparse_header_formula),
    "netcrafter_table1": Table("NetCrafter Table 1: bytes occupied/needed/padding and flits, 16 B flits", 0.0,
                               _netcrafter_table1),
    "bf3_table2": Table("BlueField-3 offload Table 2: max improvement (%) for slowdown k and transfer share c",
                        1.0, _bf3_table2),
}


def names() -> list[str]:
    """Names of every reproducible table."""
    return list(TABLES)


def reproduce(name: str) -> list[Row]:
    """The rows of table ``name``; ValueError naming the known tables if it is unknown."""
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}; known tables: {', '.join(names())}")
    return TABLES[name].rows()
