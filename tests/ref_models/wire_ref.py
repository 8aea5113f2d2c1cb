"""Reference encoding of the Fig. 6 wire format with ``struct`` (little-endian), for the unit tests."""

import struct

HEADER = struct.Struct("<HIII")  # type, dest, len, n_prs = 14 B
PR = struct.Struct("<IHQI")  # src, src_tid, idx, id = 18 B


def encode(type_: int, dest: int, len_: int, prs: list[tuple[int, int, int, int, bytes]]) -> bytes:
    """One packet; each PR is (src, src_tid, idx, id, payload) with payload b'' for reads."""
    out = [HEADER.pack(type_, dest, len_, len(prs))]
    for src, tid, idx, id_, payload in prs:
        out.append(PR.pack(src, tid, idx, id_) + (payload if type_ == 1 else b""))
    return b"".join(out)


def decode_stream(data: bytes) -> list[tuple[int, int, int, list[tuple[int, int, int, int, bytes]]]]:
    """Back-to-back packets -> [(type, dest, len, [(src, tid, idx, id, payload)])] (no validation)."""
    out, off = [], 0
    while off < len(data):
        type_, dest, len_, n = HEADER.unpack_from(data, off)
        off += HEADER.size
        prs = []
        for _ in range(n):
            src, tid, idx, id_ = PR.unpack_from(data, off)
            off += PR.size
            payload = data[off : off + len_] if type_ == 1 else b""
            off += len(payload)
            prs.append((src, tid, idx, id_, payload))
        out.append((type_, dest, len_, prs))
    return out
