"""Names that say what they are: no source cites an issue number (a comment says the reason instead),
the C++ units' binding goes by one name in the packages, and the modeled report names its values."""

from __future__ import annotations

import ast
import re

from conftest import ROOT

SOURCES = ("netsparse_torch", "hw_models", "csrc", "tests", "benchmarks", "examples", "tools", "configs")
SUFFIXES = {".py", ".cpp", ".h", ".yaml", ".proto"}
ISSUE = re.compile(r"\bissue #?\d+", re.IGNORECASE)
UNITS_ALIAS = re.compile(r"from hw_models(?:\.unit_args)? import (?:units|binding) as (\w+)")


def _files(folders, suffixes=SUFFIXES):
    for folder in folders:
        yield from (p for p in (ROOT / folder).rglob("*") if p.suffix in suffixes and "_pb2" not in p.name)


def test_no_source_cites_an_issue_number():
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in _files(SOURCES)
            for n, line in enumerate(p.read_text().splitlines(), 1) if ISSUE.search(line)]
    assert hits == []


def test_the_units_binding_has_one_name_in_the_packages():
    aliases = {a for p in _files(("netsparse_torch", "hw_models"), {".py"}) for a in UNITS_ALIAS.findall(p.read_text())}
    assert aliases == {"_units"}


def test_the_modeled_report_has_no_one_letter_names():
    # The papers' letters stay: A (the matrix), K (the property width), n (nodes) and w (the workload).
    tree = ast.parse((ROOT / "hw_models" / "analysis.py").read_text())
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    assert {name for name in bound if len(name) == 1 or name == "kk"} <= {"a", "k", "n", "w", "_"}


def test_the_strategies_carry_the_papers_names():
    from netsparse_torch.comm import STRATEGIES

    named = {name: cls.__name__ for name, cls in STRATEGIES.items()}
    assert named == {"su": "SparsityUnaware", "sa": "SparsityAware", "netsparse": "NetSparse",
                     "twoface": "TwoFace", "ds": "DenseShifting"}
