"""Tiny reference of NetCrafter stitching, to check the C++ flit link unit.

Untimed case only: every packet is queued at cycle 0, no pooling (W = 0), arrival order. Each
packet's partial tail flit is offered to the next same-destination packets still waiting (at most
``window`` of them): a whole packet fits for free, a tail piece pays ``overhead`` bytes.
"""


def stitch(sizes: list[int], dests: list[int], flit: int, overhead: int, window: int) -> dict[str, int]:
    """Flits, pieces and stitched packets of a stream of packet sizes (bytes needed)."""
    n = len(sizes)
    rem = list(sizes)
    waiting = [True] * n
    flits = pieces = 0
    stitched = set()
    for i in range(n):
        if not waiting[i]:
            continue  # it rode whole in an earlier flit
        waiting[i] = False
        flits += rem[i] // flit
        if rem[i] % flit == 0:
            continue
        flits += 1
        room = flit - rem[i] % flit
        seen = 0
        for j in range(i + 1, n):
            if seen >= window or room == 0:
                break
            if not waiting[j] or dests[j] != dests[i]:
                continue
            seen += 1
            tail = rem[j] % flit
            if rem[j] <= room:
                room -= rem[j]
                waiting[j] = False
                stitched.add(j)
            elif rem[j] >= flit and tail and tail + overhead <= room:
                room -= tail + overhead
                rem[j] -= tail
                pieces += 1
                stitched.add(j)
    return {"flits": flits, "pieces": pieces, "stitched_packets": len(stitched)}
