"""The generated protobuf and gRPC modules of ``switch.proto`` (see ``stubs.py`` for when they are made)."""

from netsparse_torch.switch.stubs import ensure_stubs

ensure_stubs()

from netsparse_torch.switch import switch_pb2 as pb  # noqa: E402
from netsparse_torch.switch import switch_pb2_grpc as pb_grpc  # noqa: E402

__all__ = ["pb", "pb_grpc"]
