"""Clients of the switch service: a node's data-plane stream, the control plane, and a ToR's uplink."""

from __future__ import annotations

import queue
import threading

import grpc

from netsparse_torch.errors import NetsparseError
from netsparse_torch.switch_service._proto import MTU_KEY, NODE_KEY, TOKEN_KEY, pb, pb_grpc
from netsparse_torch.switch_service.control import counters_dict

_END = object()
_OPTS = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]


class SwitchError(NetsparseError):
    """The switch refused a request or went away; ``code`` is the gRPC status code (or None)."""

    def __init__(self, msg: str, code: grpc.StatusCode | None = None):
        super().__init__(msg)
        self.code = code


class SwitchTimeout(SwitchError):
    """Nothing arrived from the switch in time."""


def channel(address: str, tls_ca: bytes | None = None) -> grpc.Channel:
    """An insecure channel, or a TLS one when a CA certificate is given."""
    if tls_ca:
        return grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=tls_ca), options=_OPTS)
    return grpc.insecure_channel(address, options=_OPTS)


def _meta(node: str, token: str | None, mtu: int | None = None) -> list[tuple[str, str]]:
    return [(NODE_KEY, node)] + ([(TOKEN_KEY, token)] if token else []) + ([(MTU_KEY, str(mtu))] if mtu else [])


class _Stream:
    """A bidirectional Attach stream: send() queues frames (bounded), a thread collects replies."""

    def __init__(self, address: str, node: str, *, token: str | None, tls_ca: bytes | None, depth: int = 64,
                 mtu: int | None = None):
        self._chan = channel(address, tls_ca)
        self._out: queue.Queue = queue.Queue(maxsize=depth)
        stub = pb_grpc.SwitchDataPlaneStub(self._chan)
        self._call = stub.Attach(self._frames(), metadata=_meta(node, token, mtu))
        self.error: SwitchError | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._recv_loop, daemon=True, name=f"switch-stream-{node}")
        self._thread.start()

    def _frames(self):
        while True:
            item = self._out.get()
            if item is _END:
                return
            yield pb.Frame(packets=item)

    def _recv_loop(self) -> None:
        try:
            for frame in self._call:
                self.on_frame(frame.packets)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error = SwitchError(f"switch stream failed: {e.code().name}: {e.details()}", e.code())
        finally:
            self._done.set()
            self.on_end()

    def on_frame(self, data: bytes) -> None:  # overridden
        raise NotImplementedError

    def on_end(self) -> None:
        pass

    def send(self, data: bytes, timeout: float | None = 30.0) -> None:
        """Queues one frame (back-to-back packets); blocks while the send queue is full."""
        if self.error is not None:
            raise self.error
        try:
            self._out.put(bytes(data), timeout=timeout)
        except queue.Full:
            raise SwitchError(f"switch did not accept a frame within {timeout} s (backpressure)") from None

    def alive(self) -> bool:
        return not self._done.is_set()

    def close(self) -> None:
        self._call.cancel()
        try:
            self._out.put_nowait(_END)
        except queue.Full:
            pass
        self._thread.join(timeout=5)
        self._chan.close()


class SwitchClient(_Stream):
    """A node attached to its ToR: ``send(frame)``, ``recv(timeout)`` -> bytes of packets. With ``mtu``
    (the MTU its packets are built for) it waits until the switch accepted the attachment, and raises
    the switch's refusal (another MTU, a bad token, an unconfigured switch) as a SwitchError."""

    def __init__(self, address: str, node: int, *, token: str | None = None, tls_ca: bytes | None = None,
                 depth: int = 64, mtu: int | None = None):
        self._in: queue.Queue = queue.Queue(maxsize=depth * 4)
        super().__init__(address, str(node), token=token, tls_ca=tls_ca, depth=depth, mtu=mtu)
        if mtu:
            self._call.initial_metadata()  # the switch sends it on accepting, or the call ends refused
            if self._call.done() and self._call.code() != grpc.StatusCode.OK:
                error = SwitchError(f"switch {address} refused node {node}: {self._call.details()}", self._call.code())
                self.close()
                raise error

    def on_frame(self, data: bytes) -> None:
        self._in.put(data)

    def on_end(self) -> None:
        self._in.put(_END)

    def poll(self, timeout: float = 0.05) -> bytes | None:
        """Next frame, or None when none arrives within ``timeout``; raises SwitchError when the stream ended."""
        try:
            return self.recv(timeout)
        except SwitchTimeout:
            return None

    def recv(self, timeout: float | None = 30.0) -> bytes:
        """Next frame from the switch; raises SwitchError on a stream error or timeout."""
        try:
            item = self._in.get(timeout=timeout)
        except queue.Empty:
            raise SwitchTimeout(f"no frame from the switch within {timeout} s") from None
        if item is _END:
            self._in.put(_END)  # later calls see the end too
            raise self.error or SwitchError("the switch closed the stream")
        return item


class Uplink(_Stream):
    """A ToR's uplink port on the spine: frames from the spine enter the ToR like any port's."""

    def __init__(self, core, port, address: str, name: str, *, token: str | None, tls_ca: bytes | None):
        self.core, self.port = core, port
        super().__init__(address, name, token=token, tls_ca=tls_ca, mtu=core.cfg.mtu)
        self._pump = threading.Thread(target=self._drain, daemon=True, name="switch-uplink-out")
        self._pump.start()
        port.attached = True

    def on_frame(self, data: bytes) -> None:
        from netsparse_torch.switch_service.core import FrameRejected

        try:
            self.core.admit(self.port, data)
        except FrameRejected as e:
            self.core.count_error(e.kind)

    def on_end(self) -> None:
        self.port.attached = False
        if self.error is not None:
            self.core.count_error("uplink_lost")

    def _drain(self) -> None:
        """Moves the ToR's uplink egress queue into the stream (the stream's queue is bounded too)."""
        while self.alive():
            try:
                item = self.port.egress.get(timeout=0.1)
            except queue.Empty:
                continue
            self._out.put(item)


class ControlClient:
    """The control plane of one switch (P4Runtime-like)."""

    def __init__(self, address: str, *, token: str | None = None, tls_ca: bytes | None = None,
                 timeout: float = 10.0):
        self._chan = channel(address, tls_ca)
        self._stub = pb_grpc.SwitchControlStub(self._chan)
        self._meta = [(TOKEN_KEY, token)] if token else []
        self.timeout = timeout

    def _call(self, name: str, req):
        try:
            return getattr(self._stub, name)(req, metadata=self._meta, timeout=self.timeout)
        except grpc.RpcError as e:
            raise SwitchError(f"{name} failed: {e.code().name}: {e.details()}", e.code()) from None

    def configure(self, request: pb.ConfigureRequest) -> None:
        self._call("Configure", request)

    def counters(self) -> dict:
        """ReadCounters as a plain dict (see control.counters_dict)."""
        return counters_dict(self._call("ReadCounters", pb.ReadCountersRequest()))

    def reset(self) -> None:
        self._call("Reset", pb.ResetRequest())

    def invalidate(self, prop_bytes: int = 0) -> None:
        self._call("Invalidate", pb.InvalidateRequest(prop_bytes=prop_bytes))

    def health(self) -> pb.HealthResponse:
        return self._call("Health", pb.HealthRequest())

    def close(self) -> None:
        self._chan.close()
