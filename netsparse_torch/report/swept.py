"""What differs between the runs of a sweep, by the keys the command line set: the columns of
``collect`` and ``netsparse-compare`` and the legends of their figures.

A swept key's value in a report is its actual value: the config's, or, where the run left the key at its
default (``null``, or a ``+hw.*`` key only other runs added), the value the run used, read from the
report's resolved ``hardware`` (a hardware field or one of its shortcuts) or its ``k``.
"""

from __future__ import annotations

from netsparse_torch.report.identity import OUTPUT_KEYS


def flatten(tree, prefix: str = "") -> dict:
    """``{"a.b": leaf}`` of a nested dict (lists are leaves)."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict = {}
    for key, value in tree.items():
        out.update(flatten(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


def varying_keys(flats: list[dict], ignored: tuple[str, ...] = OUTPUT_KEYS) -> list[str]:
    """The keys whose values differ between the flattened configs ``flats`` (first-seen order)."""
    keys = list(dict.fromkeys(k for f in flats for k in f))
    return [k for k in keys if k.split(".")[0] not in ignored and len({repr(f.get(k)) for f in flats}) > 1]


def hardware_field(key: str, kind: str) -> tuple[str, str] | None:
    """The ``(section, field)`` of ``HardwareParams`` that config key ``key`` sets: ``hw.<s>.<f>``,
    ``cluster.hw.<s>.<f>`` or a shortcut of the report's CLI (``rig_units``, ``strategy.options.mtu``)."""
    from hw_models.hardware import SIMULATE_SHORTCUTS, TRAIN_SHORTCUTS

    for prefix in ("hw.", "cluster.hw."):
        parts = key[len(prefix):].split(".") if key.startswith(prefix) else []
        if len(parts) == 2:
            return parts[0], parts[1]
    return (SIMULATE_SHORTCUTS if kind == "simulate" else TRAIN_SHORTCUTS).get(key)


def actual_value(report: dict, key: str, kind: str = "simulate"):
    """The value of config key ``key`` that the run used (module docstring); ``None`` when the report
    cannot tell."""
    value = flatten(report.get("config") or {}).get(key)
    if value is not None:
        return value
    field = hardware_field(key, kind)
    if field is not None:
        return ((report.get("hardware") or {}).get(field[0]) or {}).get(field[1])
    return report.get(key) if key in ("k", "kernel", "partition") else None


def swept_keys(reports: list[dict], shown: tuple[str, ...] = ()) -> list[str]:
    """Config keys whose actual values differ between ``reports`` (output keys and ``shown`` ones left out:
    columns a table has already)."""
    flats = [flatten(r.get("config") or {}) for r in reports]
    keys = [k for k in varying_keys(flats) if k not in shown]
    kinds = [_kind(r) for r in reports]
    return [k for k in keys if len({repr(actual_value(r, k, kd)) for r, kd in zip(reports, kinds, strict=True)}) > 1]


def _kind(report: dict) -> str:
    return "train" if report.get("kind") == "train" else "simulate"


def label(report: dict, keys: list[str], head: str) -> str:
    """A legend entry: ``head`` and ``key=value`` of each swept key (what tells this curve from the others)."""
    parts = [f"{k}={actual_value(report, k, _kind(report))}" for k in keys]
    return ", ".join([head, *parts]) if head else ", ".join(parts)
