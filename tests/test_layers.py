"""The import contracts of pyproject.toml hold (import-linter), and their forbidden lists are complete.

hw_models is the ground floor: it imports nothing of netsparse_torch, which builds on it.
"""

import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"] if "id" in c}


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)  # reads pyproject.toml
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_hw_models_is_the_ground_floor():
    contract = _contracts()["hw_models"]
    assert contract["forbidden_modules"] == ["netsparse_torch"] and not contract.get("ignore_imports")


def test_no_hw_models_source_names_netsparse_torch_in_an_import():
    # What the import graph cannot see: an import inside a string run by importlib, or a C++ binding
    # that imports a Python module.
    sources = [*(ROOT / "hw_models").rglob("*.py"), *(ROOT / "csrc").rglob("*.cpp")]
    texts = {p.relative_to(ROOT): p.read_text() for p in sources}
    hits = [str(p) for p, text in texts.items()
            if 'import_module("netsparse_torch' in text or 'import("netsparse_torch' in text]
    assert hits == []


def test_unit_args_is_the_one_door_to_the_units_binding():
    """The contract names the binding's one module and its one importer, and no source reaches the
    binding past it (``hw_models._C``'s units, which the import graph does not see, are imported only by
    ``hw_models/unit_binding.py``)."""
    contract = _contracts()["unit_door"]
    assert contract["type"] == "protected" and contract["protected_modules"] == ["hw_models.unit_binding"]
    assert contract["allowed_importers"] == ["hw_models.unit_args"] and not contract.get("ignore_imports")
    sources = [p for d in ("hw_models", "netsparse_torch") for p in (ROOT / d).rglob("*.py")]
    importers = sorted(str(p.relative_to(ROOT)) for p in sources
                       if "from hw_models._C import" in p.read_text() and "units" in
                       "".join(line for line in p.read_text().splitlines() if "from hw_models._C import" in line))
    assert importers == ["hw_models/unit_binding.py"]


def test_the_fabric_starts_no_switch():
    # Launch code (LocalSwitches, configure_switches) lives in run/switch_launcher.py, not in fabric/.
    contract = _contracts()["fabric_client"]
    assert contract["source_modules"] == ["netsparse_torch.fabric"]
    assert contract["forbidden_modules"] == ["netsparse_torch.switch_service.server"]
