"""gRPC server of the switch service: ``SwitchServer(role).start()`` serves data and control planes.

Attach metadata: ``x-netsparse-node`` = node id (or ``tor:<rack>`` for a ToR uplink on the spine),
``x-netsparse-token`` = the shared token when the server has one, ``x-netsparse-mtu`` = the MTU the
peer's packets are built for: another than the switch's configured MTU is refused (FAILED_PRECONDITION)
before any packet. An accepted attachment gets the initial metadata at once. Bad frames end the offending stream
with INVALID_ARGUMENT (and are counted in ``errors``); a missing/wrong token gives UNAUTHENTICATED. The
server binds 127.0.0.1 unless told otherwise; TLS is on when a certificate and key are given.
"""

from __future__ import annotations

import hmac
import logging
import queue
import threading
import time
from concurrent import futures

import grpc

from netsparse_torch.errors import ConfigError
from netsparse_torch.switch_service._proto import MTU_KEY, NODE_KEY, TOKEN_KEY, pb, pb_grpc
from netsparse_torch.switch_service.control import ConfigInvalid, config_from_request
from netsparse_torch.switch_service.core import UPLINK, FrameRejected, Port, SwitchCore

log = logging.getLogger("netsparse.switch")

_FAIL = object()  # egress sentinel: the port's stream must end with an error
MAX_MESSAGE = 64 << 20  # gRPC message limit; the switch applies its own frame limit below it


def _metadata(context) -> dict[str, str]:
    return {k: v for k, v in context.invocation_metadata()}


class _Auth:
    def __init__(self, token: str | None, core: SwitchCore):
        self.token, self.core = token, core

    def check(self, context) -> None:
        if self.token is None:
            return
        got = _metadata(context).get(TOKEN_KEY, "")
        if not hmac.compare_digest(got.encode(), self.token.encode()):
            self.core.count_error("unauthenticated")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong x-netsparse-token")


class ControlServicer(pb_grpc.SwitchControlServicer):
    """Configure / ReadCounters / Reset / Invalidate / Health."""

    def __init__(self, server: SwitchServer):
        self.s = server

    def Configure(self, request, context):
        self.s.auth.check(context)
        try:
            cfg = config_from_request(request, self.s.core.role)
            self.s.core.configure(cfg)
        except (ConfigInvalid, ValueError) as e:
            self.s.core.count_error("bad_config")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad configuration: {e}")
        if self.s.core.role == "tor" and len(cfg.racks) > 1:
            problem = self.s.connect_uplink(cfg.spine_address, f"tor:{cfg.rack_id}")
            if problem:
                self.s.core.count_error("uplink_refused")
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, problem)
        return pb.ConfigureResponse()

    def ReadCounters(self, request, context):
        self.s.auth.check(context)
        return self.s.core.counters()

    def Reset(self, request, context):
        self.s.auth.check(context)
        self.s.core.reset()
        return pb.ResetResponse()

    def Invalidate(self, request, context):
        self.s.auth.check(context)
        if request.prop_bytes < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "prop_bytes must be >= 0")
        try:
            self.s.core.invalidate(request.prop_bytes)
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        return pb.InvalidateResponse()

    def Health(self, request, context):
        self.s.auth.check(context)
        core = self.s.core
        return pb.HealthResponse(role=core.role, configured=core.cfg is not None,
                                 attached=sorted(p.name for p in core.ports.values() if p.attached),
                                 uplink_connected=self.s.uplink is not None and self.s.uplink.alive())


_PRECONDITIONS = ("not_configured", "mtu_mismatch")


def _check_mtu(mtu: str | None, core: SwitchCore, name: str) -> None:
    """Refuses a peer whose packets are built for another MTU than the switch's (it would reject them
    one by one as oversized, or cut its own packets too small for the peer)."""
    if mtu is None or core.cfg is None or mtu == str(core.cfg.mtu):
        return
    raise FrameRejected("mtu_mismatch", f"{name} builds packets for an MTU of {mtu} B, this {core.role} is configured "
                        f"for {core.cfg.mtu} B: configure the switches with the run's MTU (hw.headers.mtu_bytes)")


class DataPlaneServicer(pb_grpc.SwitchDataPlaneServicer):
    """One bidirectional stream per attached node (or ToR, on the spine)."""

    def __init__(self, server: SwitchServer):
        self.s = server

    def Attach(self, request_iterator, context):
        core = self.s.core
        self.s.auth.check(context)
        meta = _metadata(context)
        who = meta.get(NODE_KEY, "")
        name, expected_src = (who, -1) if who.startswith("tor:") else (f"node:{who}", int(who) if who.isdigit() else -2)
        try:
            if expected_src == -2:
                raise FrameRejected("bad_attach", f"metadata {NODE_KEY} must be a node id or tor:<rack>, got {who!r}")
            port = core.port(name)
            _check_mtu(meta.get(MTU_KEY), core, name)
            with core._lock:
                if port.attached:
                    raise FrameRejected("bad_attach", f"{name} is already attached")
                port.attached, port.failed = True, None
            # detach as soon as the RPC ends (a cancelled client may reattach right away)
            context.add_callback(lambda: setattr(port, "attached", False))
        except FrameRejected as e:
            core.count_error(e.kind)
            context.abort(grpc.StatusCode.FAILED_PRECONDITION if e.kind in _PRECONDITIONS
                          else grpc.StatusCode.INVALID_ARGUMENT, str(e))
        context.send_initial_metadata(())  # accepted: a SwitchClient given an MTU waits for this
        error: list = []
        reader = threading.Thread(target=self._read, args=(request_iterator, port, expected_src, error), daemon=True)
        reader.start()
        try:
            yield from self._write(port, context, error)
        finally:
            port.attached = False

    def _read(self, request_iterator, port: Port, expected_src: int, error: list) -> None:
        try:
            for frame in request_iterator:
                self.s.core.admit(port, frame.packets, expected_src)
        except FrameRejected as e:
            self.s.core.count_error(e.kind)
            error.append(e)
            port.egress.put(_FAIL)  # wakes the writer, which ends the stream with the error
        except grpc.RpcError:
            pass  # the client went away; the writer notices through the context
        except Exception as e:  # noqa: BLE001 - anything else is counted and ends this stream only
            self.s.core.count_error("internal")
            error.append(FrameRejected("internal", f"internal error: {e}"))
            port.egress.put(_FAIL)

    def _write(self, port: Port, context, error: list):
        limit = self.s.core.max_frame_bytes
        while context.is_active() and not self.s.stopping.is_set():
            try:
                item = port.egress.get(timeout=0.1)
            except queue.Empty:
                continue
            batch, size = [], 0
            while item is not _FAIL:
                batch.append(item)
                size += len(item)
                if size >= limit:
                    break
                try:
                    item = port.egress.get_nowait()
                except queue.Empty:
                    break
            if batch:
                yield pb.Frame(packets=b"".join(batch))
            if item is _FAIL:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error[0]) if error else "frame rejected")


class SwitchServer:
    """A ToR or spine switch on ``host:port`` (port 0 = a free port, see ``.port`` after start)."""

    def __init__(self, role: str, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 tls_cert: bytes | None = None, tls_key: bytes | None = None, tls_ca: bytes | None = None,
                 queue_depth: int = 64, max_workers: int = 64, stall_timeout_s: float = 30.0):
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            # gRPC would bind the port modulo 65536 (99999 -> 34463) and say nothing
            raise ConfigError(f"port must be 0 (a free port) or 1-65535, got {port!r}")
        self.core = SwitchCore(role, queue_depth=queue_depth, stall_timeout_s=stall_timeout_s)
        self.auth = _Auth(token, self.core)
        self.token, self.tls_ca = token, tls_ca
        self.host = host
        self.stopping = threading.Event()
        self.uplink = None
        opts = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers), options=opts)
        pb_grpc.add_SwitchControlServicer_to_server(ControlServicer(self), self._server)
        pb_grpc.add_SwitchDataPlaneServicer_to_server(DataPlaneServicer(self), self._server)
        addr = f"{host}:{port}"
        if tls_cert and tls_key:
            creds = grpc.ssl_server_credentials([(tls_key, tls_cert)])
            self.port = self._server.add_secure_port(addr, creds)
        else:
            self.port = self._server.add_insecure_port(addr)
        if self.port == 0:
            raise OSError(f"cannot bind {addr}")
        self.summary: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> SwitchServer:
        self._server.start()
        log.info("switch %s listening on %s", self.core.role, self.address)
        return self

    def connect_uplink(self, address: str, name: str, timeout: float = 10.0) -> str | None:
        """(ToR) attaches the uplink port to the spine at ``address`` and waits until the spine lists
        it; returns None, or why the spine refused it (configure the spine before its ToRs)."""
        from netsparse_torch.switch_service.client import ControlClient, SwitchError, Uplink

        if self.uplink is not None:
            self.uplink.close()
        self.uplink = Uplink(self.core, self.core.port(UPLINK), address, name, token=self.token, tls_ca=self.tls_ca)
        spine = ControlClient(address, token=self.token, tls_ca=self.tls_ca, timeout=timeout)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if not self.uplink.alive():
                    return f"spine at {address} refused the uplink: {self.uplink.error}"
                try:
                    if name in spine.health().attached:
                        return None
                except SwitchError as e:
                    return f"spine at {address} unreachable: {e}"
                time.sleep(0.01)
            return f"spine at {address} did not attach {name} within {timeout} s"
        finally:
            spine.close()

    def stop(self, grace: float = 1.0) -> str:
        """Stops serving, logs and returns the one-line counter summary."""
        if self.summary is None:
            self.stopping.set()
            if self.uplink is not None:
                self.uplink.close()
            self._server.stop(grace).wait(grace + 5)
            self.summary = self.core.stop()
        return self.summary

    def wait(self) -> None:
        self._server.wait_for_termination()

    def __enter__(self) -> SwitchServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
