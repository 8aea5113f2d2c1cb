"""A missing build product (the C++ extension, the gRPC stubs) is one clear NotBuiltError naming the fix,
never a fallback: `make install` always builds both, and nothing is generated at import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)})


@pytest.mark.parametrize("package, code", [
    ("hw_models", "from hw_models import units"),
    ("netsparse_torch", "from netsparse_torch.native import _C"),
])
def test_missing_extension_is_one_clear_error(tmp_path, package, code):
    # A source tree without the built _C*.so, as a fresh clone has before `make install`.
    for name in ("hw_models", "netsparse_torch"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    # Without `pip install -e .`'s finder, which would find the extension in the repository instead.
    code = ("import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path\n"
            "                    if not getattr(f, '__module__', '').startswith('__editable__')]\n"
            "from netsparse_torch.errors import NotBuiltError\n"
            "try:\n"
            f"    {code}\n"
            "except NotBuiltError as e:\n"
            "    print(e)\n")
    out = _run(code, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"{package}._C is not built" in out.stdout and "run `make install`" in out.stdout


def test_missing_stubs_are_one_clear_error_and_never_generated():
    code = ("import sys\n"
            "sys.modules['netsparse_torch.switch_service.switch_pb2'] = None\n"  # as if the file were missing
            "import grpc_tools.protoc as p\n"
            "p.main = lambda *a: sys.exit('protoc ran at import')\n"
            "from netsparse_torch.errors import NotBuiltError\n"
            "try:\n"
            "    import netsparse_torch.switch_service\n"
            "except NotBuiltError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "gRPC stubs" in out.stdout and "run `make install`" in out.stdout
