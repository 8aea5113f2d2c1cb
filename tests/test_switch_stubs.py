"""The switch service's gRPC stubs are generated at build time (setup.py's build_py, which editable
installs run too) and shipped with the .proto, in package ``netsparse.switch.v1``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_build_py_generates_the_stubs_and_ships_the_proto(tmp_path):
    src = tmp_path / "src"  # a source tree without generated stubs, as a fresh clone has
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("netsparse_torch", "hw_models", "configs"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("*_pb2*.py", "*.so", "__pycache__"))
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path / "lib")], cwd=src,
                   env={"NETSPARSE_NO_EXTENSION": "1", "PATH": "/usr/bin:/bin"}, check=True, timeout=120,
                   capture_output=True)
    built = tmp_path / "lib" / "netsparse_torch" / "switch"
    assert {"switch.proto", "switch_pb2.py", "switch_pb2_grpc.py"} <= {p.name for p in built.iterdir()}
    assert "netsparse.switch.v1.Switch" in (built / "switch_pb2_grpc.py").read_text()


def test_installed_stubs_are_current():
    from netsparse_torch.switch import _proto, stubs

    assert not stubs.stale()
    assert _proto.pb.DESCRIPTOR.package == "netsparse.switch.v1"
