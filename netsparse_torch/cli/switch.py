"""``python -m netsparse_torch.cli.switch --role tor|spine --port N`` (installed as ``netsparse-switch``).

Serves until SIGINT/SIGTERM, then logs the one-line counter summary. Configure it through the control
plane (``ControlClient(address).configure(configure_request(...))``) or with ``--config``: a YAML of the
fabric (``n_nodes``, ``prop_bytes``, ``racks: {rack_id: [nodes]}``, and optionally ``rack_id``,
``spine_address``, ``cache``, ``concatenation``) and of the hardware, ``hw: {section: {field: value}}``
as ``configs/hw/`` holds it (NetSparse Table 5 where not given): the switch gets the numbers of that
``HardwareParams``, as the switches of a ``netsparse-train`` run get the run's.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any

from netsparse_torch.cli.failure import fail
from netsparse_torch.errors import ConfigError, NetsparseError

PROG = "netsparse-switch"
FABRIC_KEYS = ("n_nodes", "prop_bytes", "racks", "rack_id", "spine_address", "cache", "concatenation")
"""``--config``'s keys besides ``hw``: the fabric a switch sees (configure_request's)."""


def _read(path: str | None) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def read_config(path: str) -> dict[str, Any]:
    """``--config``'s ``configure_request`` keywords: its fabric keys, and ``hardware``, the
    ``HardwareParams`` of its ``hw`` sections. A hardware number outside ``hw`` is refused, naming its
    field, so a switch has one source of hardware numbers."""
    from hw_models.hardware import read_yaml_mapping, resolve
    from hw_models.unit_args import SWITCH_OPTIONS

    data = read_yaml_mapping(path, "--config", "the fabric keys and hw")
    hw = data.pop("hw", None) or {}
    numbers = sorted(set(data) & set(SWITCH_OPTIONS))
    unknown = sorted(set(data) - set(FABRIC_KEYS))
    if numbers or unknown:
        raise ConfigError(f"--config {path}: {', '.join(numbers + unknown)} is not a key here; hardware numbers go "
                          f"under hw: {{section: {{field: value}}}} (e.g. hw.property_cache.size_bytes), the fabric "
                          f"keys are {', '.join(FABRIC_KEYS)}")
    missing = [k for k in ("n_nodes", "prop_bytes", "racks") if k not in data]
    if missing:
        raise ConfigError(f"--config {path} needs {', '.join(missing)}")
    if not isinstance(hw, dict) or not isinstance(data["racks"], dict):
        raise ConfigError(f"--config {path}: hw and racks must be mappings ({{section: {{field: value}}}}, "
                          "{rack_id: [nodes]})")
    data["racks"] = {int(k): [int(n) for n in v] for k, v in data["racks"].items()}
    return {**data, "hardware": resolve(hw, [], [])}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--role", choices=("tor", "spine"), required=True)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback only)")
    p.add_argument("--port", type=int, default=0, help="0 = a free port (printed at start)")
    p.add_argument("--token-env", default="NETSPARSE_SWITCH_TOKEN",
                   help="environment variable holding the shared token (unset = no authentication)")
    p.add_argument("--tls-cert", help="PEM server certificate (with --tls-key: TLS on)")
    p.add_argument("--tls-key", help="PEM server private key")
    p.add_argument("--tls-ca", help="PEM CA for the ToR's TLS uplink to the spine")
    p.add_argument("--queue-depth", type=int, default=64, help="frames per bounded queue (backpressure)")
    p.add_argument("--config", help="YAML of the fabric and its hw sections (HardwareParams), applied at start")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Runs one switch until interrupted; returns the exit status."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from netsparse_torch.switch_service import ControlClient, SwitchServer, configure_request

    if bool(args.tls_cert) != bool(args.tls_key):
        fail(PROG, "--tls-cert and --tls-key go together: give both or neither")
    token = os.environ.get(args.token_env) or None
    try:
        request = configure_request(**read_config(args.config)) if args.config else None
        server = SwitchServer(args.role, host=args.host, port=args.port, token=token, tls_cert=_read(args.tls_cert),
                              tls_key=_read(args.tls_key), tls_ca=_read(args.tls_ca), queue_depth=args.queue_depth)
    except (NetsparseError, OSError, RuntimeError, ValueError) as e:
        fail(PROG, e)
    # The handlers come before the "listening" line: whoever starts the switch may stop it as soon as it
    # reads that line, and a SIGTERM before them would end the process without its summary (rc -15).
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    server.start()
    print(f"netsparse-switch {args.role} listening on {server.address}", flush=True)
    try:
        if request is not None:
            ControlClient(server.address, token=token).configure(request)
        done.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
