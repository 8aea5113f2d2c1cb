"""Generates the gRPC stubs of ``switch.proto`` (gitignored ``switch_pb2*.py``) when missing or stale.

The stubs are produced at import time with grpcio-tools, into a temporary directory first and then
moved in place with ``os.replace``, so concurrent imports from several processes never see half a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_PKG = Path(__file__).resolve().parent
_ROOT = _PKG.parent.parent  # import root, so the stubs import ``netsparse_torch.switch.switch_pb2``
_PROTO = _PKG / "switch.proto"
_OUTS = ("switch_pb2.py", "switch_pb2_grpc.py")


def _stale() -> bool:
    mtime = _PROTO.stat().st_mtime
    return any(not (_PKG / o).exists() or (_PKG / o).stat().st_mtime < mtime for o in _OUTS)


def ensure_stubs() -> None:
    """Runs protoc (grpc_tools) when a stub is missing or older than switch.proto."""
    if not _stale():
        return
    from grpc_tools import protoc  # build-time dependency, only needed when regenerating

    with tempfile.TemporaryDirectory(dir=_PKG) as tmp:
        rel = _PROTO.relative_to(_ROOT)
        rc = protoc.main(["grpc_tools.protoc", f"-I{_ROOT}", f"--python_out={tmp}", f"--grpc_python_out={tmp}",
                          str(rel)])
        if rc != 0:
            raise RuntimeError(f"protoc failed ({rc}) on {_PROTO}")
        for o in _OUTS:
            os.replace(Path(tmp) / rel.parent / o, _PKG / o)


ensure_stubs()

from netsparse_torch.switch import switch_pb2 as pb  # noqa: E402
from netsparse_torch.switch import switch_pb2_grpc as pb_grpc  # noqa: E402

__all__ = ["pb", "pb_grpc", "ensure_stubs"]
