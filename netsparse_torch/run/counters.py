"""Arithmetic on counters as the report holds them: nested dicts whose leaves are numbers (calls,
bytes, seconds) or labels (strings, which are kept as they are).

A resumed run adds the counters its checkpoint carried (what the earlier attempts counted over their
epochs) to its own, so that every counter of its report covers the same epochs as an uninterrupted
run's (:mod:`netsparse_torch.run.training`)."""

from __future__ import annotations

from numbers import Number


def add(a: dict, b: dict) -> dict:
    """``a + b`` leaf by leaf; a key on one side only is copied (a label: ``b``'s wins)."""
    return _combine(a, b, 1)


def sub(a: dict, b: dict) -> dict:
    """``a - b`` leaf by leaf (what was counted since ``b`` was read, when ``a`` is read later)."""
    return _combine(a, b, -1)


def _combine(a: dict, b: dict, sign: int) -> dict:
    out = dict(a)
    for key, value in b.items():
        mine = out.get(key)
        if isinstance(value, dict):
            out[key] = _combine(mine if isinstance(mine, dict) else {}, value, sign)
        elif isinstance(value, Number) and not isinstance(value, bool):
            out[key] = (mine if isinstance(mine, Number) else 0) + sign * value
        elif key not in out or sign > 0:
            out[key] = value
    return out


def add_switches(a: list[dict], b: list[dict]) -> list[dict]:
    """Two readings of the switches' counters (``[{name, role, address, counters}]``) added by switch name,
    with ``prs_per_packet`` again from the sums; the addresses are ``b``'s (the later attempt's switches)."""
    earlier = {s["name"]: s["counters"] for s in a}
    out = []
    for switch in b:
        counters = add(earlier.get(switch["name"], {}), switch["counters"])
        out_packets = counters.get("packets_out", 0)
        counters["prs_per_packet"] = counters.get("prs_out", 0) / out_packets if out_packets else 0.0
        out.append({**switch, "counters": counters})
    return out
