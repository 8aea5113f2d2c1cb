"""Switch process lifecycle: the CLI serves and logs its summary on SIGTERM; a killed switch makes
its clients fail clearly (no hang), and a restarted one accepts new attachments."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from hw_models import unit_args, units
from netsparse_torch.switch_service import ControlClient, SwitchClient, SwitchError, SwitchServer, configure_request

PROP = 16
WIRE = unit_args.wire()  # NetSparse Table 5 packet sizes (MTU, upper-layer header)


def read_packet(src: int, dest: int) -> bytes:
    return units.encode_packet(units.READ, dest, PROP, np.array([src]), np.array([0]), np.array([7]), np.array([1]),
                               **WIRE)


def test_cli_serves_and_logs_a_one_line_summary_on_sigterm():
    proc = subprocess.Popen([sys.executable, "-m", "netsparse_torch.cli.switch", "--role", "spine", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "listening on 127.0.0.1:" in line, line
        health = ControlClient(line.split()[-1], timeout=30).health()
        assert health.role == "spine" and not health.configured
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0
    assert [ln for ln in err.splitlines() if "switch spine stopped: packets in=0" in ln]


def test_cli_installs_its_stop_handlers_before_it_says_it_listens(monkeypatch):
    """Whoever starts the switch may stop it as soon as it reads the "listening" line (the test above does,
    after one health call): a SIGTERM before the handlers would end it with rc -15 and no summary, which
    a loaded host showed. In order: the handlers, the start, the line."""
    import threading

    from netsparse_torch import switch_service
    from netsparse_torch.cli import switch as cli

    order = []

    class Server:
        address = "127.0.0.1:1"

        def __init__(self, *args, **kwargs):
            pass

        def start(self):
            order.append("start")

        def stop(self):
            order.append("stop")

    class StopAtOnce(threading.Event):
        def wait(self, timeout=None):
            return True

    monkeypatch.setattr(switch_service, "SwitchServer", Server)
    monkeypatch.setattr(cli.threading, "Event", StopAtOnce)
    monkeypatch.setattr(cli.signal, "signal", lambda sig, handler: order.append(sig))
    monkeypatch.setattr("builtins.print", lambda *args, **kwargs: order.append("line"))
    assert cli.main(["--role", "spine"]) == 0
    assert order == [signal.SIGINT, signal.SIGTERM, "start", "line", "stop"]


def test_killed_switch_fails_its_clients_and_a_restart_serves_again():
    server = SwitchServer("tor")
    port = None
    a = b = None
    try:
        server.start()
        port = server.port
        ControlClient(server.address).configure(configure_request(2, PROP, {0: [0, 1]}))
        a, b = SwitchClient(server.address, 0), SwitchClient(server.address, 1)
        a.send(read_packet(0, 1))
        assert units.decode_packet(b.recv(timeout=10), **WIRE)["idx"].tolist() == [7]
        server.stop(grace=0)
        with pytest.raises(SwitchError):
            b.recv(timeout=10)  # the stream ends: an error, not a hang
        with pytest.raises(SwitchError):
            a.send(read_packet(0, 1))
            a.recv(timeout=10)
    finally:
        for c in (a, b):
            if c is not None:
                c.close()
        server.stop()
    restarted = SwitchServer("tor", port=port)
    try:
        restarted.start()
        ControlClient(restarted.address).configure(configure_request(2, PROP, {0: [0, 1]}))
        _read_reaches_its_owner(restarted.address)
    finally:
        restarted.stop()


def _read_reaches_its_owner(address: str, **client) -> None:
    """Node 0's read PR for idx 7 reaches node 1, its owner, through the ToR at ``address``."""
    a, b = SwitchClient(address, 0, **client), SwitchClient(address, 1, **client)
    try:
        a.send(read_packet(0, 1))
        assert units.decode_packet(b.recv(timeout=10), **WIRE)["idx"].tolist() == [7]
    finally:
        a.close()
        b.close()


@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl is needed to make a test certificate")
def test_tls_and_token_together(tmp_path):
    """A ToR with TLS and a token: a TLS client with the token gets through, a plaintext one does not."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True, timeout=60)
    ca = cert.read_bytes()
    server = SwitchServer("tor", token="t", tls_cert=ca, tls_key=key.read_bytes())
    try:
        server.start()
        ControlClient(server.address, token="t", tls_ca=ca).configure(configure_request(2, PROP, {0: [0, 1]}))
        _read_reaches_its_owner(server.address, token="t", tls_ca=ca)
        with pytest.raises(SwitchError):
            ControlClient(server.address, token="t", timeout=3).health()  # plaintext to a TLS port
    finally:
        server.stop()


def test_a_port_that_stops_reading_is_failed_and_its_prs_counted_not_dropped_silently():
    """Node 1 never reads: gRPC flow control, then its bounded egress queue fill up; after the stall
    timeout the ToR fails the port and counts every PR it could not deliver, so PRs in = PRs delivered
    + undelivered."""
    k = units.max_prs_per_packet(WIRE["mtu"], WIRE["upper_bytes"], units.READ, PROP)
    pkt = units.encode_packet(units.READ, 1, PROP, np.zeros(k, np.int64), np.zeros(k, np.int64),
                              np.arange(k), np.arange(k), **WIRE)
    frame, n_frames = pkt * 32, 600  # ~28 MB, beyond any flow-control window
    server = SwitchServer("tor", queue_depth=2, stall_timeout_s=1.0)
    a = b = None
    try:
        server.start()
        ctl = ControlClient(server.address)
        ctl.configure(configure_request(2, PROP, {0: [0, 1]}, cache=False))
        b = SwitchClient(server.address, 1, depth=1)  # never calls recv()
        a = SwitchClient(server.address, 0)
        for _ in range(n_frames):
            a.send(frame, timeout=30)
        sent = n_frames * 32 * k
        for _ in range(600):
            c = ctl.counters()
            undelivered = c["errors"].get("undelivered_prs", 0)
            if c["read_prs_in"] == sent and c["ports"]["node:1"]["prs_out"] + undelivered == sent:
                break
            time.sleep(0.05)
        assert c["read_prs_in"] == sent
        assert undelivered > 0
        assert c["ports"]["node:1"]["prs_out"] + undelivered == sent
    finally:
        for cl in (a, b):
            if cl is not None:
                cl.close()
        server.stop()
