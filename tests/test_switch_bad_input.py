"""Bad input to the switch service: each case is rejected with INVALID_ARGUMENT or UNAUTHENTICATED,
counted under its own error key, and the switch goes on serving the other nodes."""

from __future__ import annotations

import struct
import time

import grpc
import pytest

from hw_models import unit_args, units
from netsparse_torch.switch_service import ControlClient, SwitchClient, SwitchError, SwitchServer, configure_request

PROP = 16
WIRE = unit_args.wire()  # NetSparse Table 5 packet sizes (MTU, upper-layer header)
TOKEN = "s3cret"


@pytest.fixture
def tor():
    """A configured 3-node single-rack ToR on a free loopback port, with a token; always stopped."""
    server = SwitchServer("tor", token=TOKEN, stall_timeout_s=5)
    try:
        server.start()
        ControlClient(server.address, token=TOKEN).configure(configure_request(3, PROP, {0: [0, 1, 2]}))
        yield server
    finally:
        server.stop()


def header(type_: int, dest: int, len_: int, n_prs: int) -> bytes:
    return struct.pack("<HIII", type_, dest, len_, n_prs)  # Fig. 6 concatenation header, 14 B


def pr(src: int, idx: int, id_: int) -> bytes:
    return struct.pack("<IHQI", src, 0, idx, id_)  # Fig. 6 PR header, 18 B


def read_packet(src: int, dest: int, n: int = 1, len_: int = PROP) -> bytes:
    return header(units.READ, dest, len_, n) + b"".join(pr(src, 100 + i, i) for i in range(n))


def rejected(server, node: int, frame: bytes, token: str | None = TOKEN) -> SwitchError:
    client = SwitchClient(server.address, node, token=token)
    try:
        with pytest.raises(SwitchError) as info:  # at send (stream already ended) or at recv
            client.send(frame)
            client.recv(timeout=10)
        return info.value
    finally:
        client.close()


def still_serving(server) -> None:
    """Node 1 sends a good read to node 2, which receives it: the switch still forwards."""
    a = SwitchClient(server.address, 1, token=TOKEN)
    b = SwitchClient(server.address, 2, token=TOKEN)
    try:
        a.send(read_packet(1, 2))
        got = b.recv(timeout=10)
        assert units.decode_packet(got, **WIRE)["src"].tolist() == [1]
    finally:
        a.close()
        b.close()


def errors(server) -> dict:
    return ControlClient(server.address, token=TOKEN).counters()["errors"]


@pytest.mark.parametrize("frame, key", [
    (b"\x00\x01\x02\x03\x04", "malformed"),                                  # truncated header
    (header(7, 1, PROP, 1) + pr(0, 1, 1), "malformed"),                      # unknown packet type
    (header(units.READ, 1, PROP, 3) + pr(0, 1, 1) + pr(0, 2, 2), "n_prs_mismatch"),  # announces 3, holds 2
    (read_packet(0, 1, n=100), "oversize"),                                  # 1814 B > 1450 B (MTU - 50)
    (read_packet(0, 7), "unknown_destination"),                              # node 7 of a 3-node fabric
    (read_packet(2, 1), "bad_source"),                                       # node 0 forging node 2's reads
    (read_packet(0, 1, len_=PROP * 2), "wrong_property_size"),               # len differs from the kernel's
])
def test_bad_frame_is_rejected_counted_and_others_keep_going(tor, frame, key):
    err = rejected(tor, 0, frame)
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert errors(tor) == {key: 1}
    still_serving(tor)


def test_good_packets_before_a_bad_one_are_delivered(tor):
    b = SwitchClient(tor.address, 1, token=TOKEN)
    try:
        err = rejected(tor, 0, read_packet(0, 1) + b"\x01" * 3)
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT
        # the whole frame is refused before it reaches the pipe: nothing arrives at node 1
        with pytest.raises(SwitchError):
            b.recv(timeout=0.5)
    finally:
        b.close()
    assert errors(tor) == {"malformed": 1}


def test_unauthenticated_data_and_control_are_refused(tor):
    err = rejected(tor, 0, read_packet(0, 1), token=None)
    assert err.code == grpc.StatusCode.UNAUTHENTICATED
    err = rejected(tor, 0, read_packet(0, 1), token="wrong")
    assert err.code == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(SwitchError) as info:
        ControlClient(tor.address).counters()
    assert info.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert errors(tor) == {"unauthenticated": 3}
    still_serving(tor)


def test_unknown_node_and_double_attach_are_refused(tor):
    err = rejected(tor, 9, read_packet(9, 1))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and "not a port" in str(err)
    first = SwitchClient(tor.address, 0, token=TOKEN)
    try:
        ctl = ControlClient(tor.address, token=TOKEN)
        for _ in range(500):  # the first stream is attached before the second one tries
            if "node:0" in ctl.health().attached:
                break
            time.sleep(0.01)
        err = rejected(tor, 0, read_packet(0, 1))
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT and "already attached" in str(err)
    finally:
        first.close()


def test_bad_configuration_is_invalid_argument():
    server = SwitchServer("tor")
    try:
        server.start()
        ctl = ControlClient(server.address)
        with pytest.raises(SwitchError) as info:
            ctl.configure(configure_request(4, PROP, {0: [0, 1], 1: [2, 3]}))  # two racks, no spine
        assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT and "spine_address" in str(info.value)
        with pytest.raises(SwitchError) as info:
            ctl.configure(configure_request(3, PROP, {0: [0, 1]}))  # node 2 in no rack
        assert "no rack" in str(info.value)
    finally:
        server.stop()


def test_tor_configured_before_its_spine_fails_clearly():
    spine, tor_server = SwitchServer("spine"), SwitchServer("tor")
    try:
        spine.start()
        tor_server.start()
        racks = {0: [0], 1: [1]}
        with pytest.raises(SwitchError) as info:
            ControlClient(tor_server.address).configure(
                configure_request(2, PROP, racks, rack_id=0, spine_address=spine.address))
        assert info.value.code == grpc.StatusCode.FAILED_PRECONDITION and "not configured" in str(info.value)
        ControlClient(spine.address).configure(configure_request(2, PROP, racks))
        ControlClient(tor_server.address).configure(
            configure_request(2, PROP, racks, rack_id=0, spine_address=spine.address))
        assert ControlClient(tor_server.address).health().uplink_connected
    finally:
        tor_server.stop()
        spine.stop()
