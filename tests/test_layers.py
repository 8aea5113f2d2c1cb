"""The import contracts of pyproject.toml hold (import-linter), and their forbidden lists are complete.

hw_models may build on plan/, the C++ extension and errors only; a forbidden contract lists every
other top-level module, so a module added later must be placed in the list (or allowed, with a reason).
"""

import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT

import netsparse_torch

# The extension: import-linter reads Python source only, so it is allowed everywhere.
EXTENSION = "_C"


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"] if "id" in c}


def _top_level(*allowed: str) -> set[str]:
    """Every top-level module of netsparse_torch but ``allowed`` and the extension."""
    names = {m.name for m in pkgutil.iter_modules(netsparse_torch.__path__)} - {EXTENSION, *allowed}
    return {f"netsparse_torch.{n}" for n in names}


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)  # reads pyproject.toml
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_hw_models_forbids_everything_but_plan_and_errors():
    forbidden = set(_contracts()["hw_models"]["forbidden_modules"])
    assert forbidden == _top_level("plan", "errors")


def test_the_leaves_forbid_everything_but_errors():
    forbidden = set(_contracts()["leaves"]["forbidden_modules"])
    # report and graph hold the leaves themselves; a leaf importing a sibling is a review matter.
    assert forbidden == _top_level("errors", "report", "graph") | {"hw_models"}
