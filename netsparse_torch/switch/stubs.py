"""Generates the gRPC stubs of ``switch.proto`` (gitignored ``switch_pb2*.py``) with grpcio-tools.

``setup.py`` runs this at build/install time (it loads this file by path, so it imports nothing from
the package). Importing the service regenerates the stubs only when ``switch.proto`` is newer than
them, which happens in a source checkout after editing the ``.proto``. Stubs are written to a
temporary directory first and moved in place with ``os.replace``, so concurrent imports from several
processes never see half a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

PKG = Path(__file__).resolve().parent
_ROOT = PKG.parent.parent  # import root, so the stubs import ``netsparse_torch.switch.switch_pb2``
_PROTO = PKG / "switch.proto"
_OUTS = ("switch_pb2.py", "switch_pb2_grpc.py")


def stale() -> bool:
    mtime = _PROTO.stat().st_mtime
    return any(not (PKG / o).exists() or (PKG / o).stat().st_mtime < mtime for o in _OUTS)


def generate() -> None:
    """Runs protoc (grpc_tools) on switch.proto into this package."""
    try:
        from grpc_tools import protoc
    except ImportError as exc:
        raise RuntimeError("generating the switch service stubs needs grpcio-tools: "
                           "pip install 'grpcio-tools>=1.60'") from exc
    with tempfile.TemporaryDirectory(dir=PKG) as tmp:
        rel = _PROTO.relative_to(_ROOT)
        rc = protoc.main(["grpc_tools.protoc", f"-I{_ROOT}", f"--python_out={tmp}", f"--grpc_python_out={tmp}",
                          str(rel)])
        if rc != 0:
            raise RuntimeError(f"protoc failed ({rc}) on {_PROTO}")
        for o in _OUTS:
            os.replace(Path(tmp) / rel.parent / o, PKG / o)


def ensure_stubs() -> None:
    if stale():
        generate()
