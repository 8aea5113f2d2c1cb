"""``python -m netsparse_torch.cli.switch --role tor|spine --port N`` (installed as ``netsparse-switch``).

Serves until SIGINT/SIGTERM, then logs the one-line counter summary. Configure it through the control
plane (``ControlClient(address).configure(configure_request(...))``) or with ``--config`` (YAML, the
keyword arguments of ``configure_request``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading


def _read(path: str | None) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="netsparse-switch", description=__doc__.splitlines()[0])
    p.add_argument("--role", choices=("tor", "spine"), required=True)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback only)")
    p.add_argument("--port", type=int, default=0, help="0 = a free port (printed at start)")
    p.add_argument("--token-env", default="NETSPARSE_SWITCH_TOKEN",
                   help="environment variable holding the shared token (unset = no authentication)")
    p.add_argument("--tls-cert", help="PEM server certificate (with --tls-key: TLS on)")
    p.add_argument("--tls-key", help="PEM server private key")
    p.add_argument("--tls-ca", help="PEM CA for the ToR's TLS uplink to the spine")
    p.add_argument("--queue-depth", type=int, default=64, help="frames per bounded queue (backpressure)")
    p.add_argument("--config", help="YAML with configure_request keywords, applied at start")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Runs one switch until interrupted; returns the exit status."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from netsparse_torch.switch_service import ControlClient, SwitchServer, configure_request

    if bool(args.tls_cert) != bool(args.tls_key):
        print("netsparse-switch: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    token = os.environ.get(args.token_env) or None
    try:
        server = SwitchServer(args.role, host=args.host, port=args.port, token=token, tls_cert=_read(args.tls_cert),
                              tls_key=_read(args.tls_key), tls_ca=_read(args.tls_ca), queue_depth=args.queue_depth)
    except (OSError, RuntimeError, ValueError) as e:
        print(f"netsparse-switch: {e}", file=sys.stderr)
        return 1
    server.start()
    print(f"netsparse-switch {args.role} listening on {server.address}", flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    try:
        if args.config:
            import yaml

            with open(args.config) as f:
                kw = yaml.safe_load(f) or {}
            kw["racks"] = {int(k): list(v) for k, v in kw["racks"].items()}
            ControlClient(server.address, token=token).configure(configure_request(**kw))
        done.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
