"""What makes a ``netsparse-simulate`` (or ``netsparse-train``) run the run it is: its settings and its
hardware, not where it wrote. Two reports of one identity are the same modeled case (a rerun of a sweep
skips a point whose report has it); a report of another identity is never overwritten.

A report's name in ``report_dir`` (:func:`report_stem`) carries the matrix, nodes, topology, kernel and
K, then the sweep's ``tag`` or, without one, the command line's other overrides (:func:`override_suffix`),
so the runs of a sweep get names of their own.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from netsparse_torch.errors import ConfigError

OUTPUT_KEYS = ("tag", "report_dir", "report_path", "checkpoint_dir", "plots", "analog_cache", "rerun", "hydra")
"""Config keys that say where a run writes, or whether it reruns, not what it models."""

STEM_KEYS = ("matrix", "nodes", "topology", "kernel", "k")
"""Keys the report name shows in its stem (``<matrix>-n<nodes>-<topology>-<kernel>-k<K>``)."""

MAX_SUFFIX = 120
"""Longest override suffix in a file name; a longer one is replaced by a digest of itself."""


def identity(config: dict, hardware: dict) -> dict:
    """The run's identity: ``config`` without :data:`OUTPUT_KEYS`, and the resolved ``hardware`` (a
    hardware file's content, not only its name), as strict JSON data."""
    from netsparse_torch.report.train_report import strict

    return json.loads(json.dumps(strict({"config": {k: v for k, v in config.items() if k not in OUTPUT_KEYS},
                                         "hardware": hardware}), sort_keys=True))


def report_identity(report: dict) -> dict:
    """The identity of a written report (its ``config`` and ``hardware``)."""
    return identity(report.get("config") or {}, report.get("hardware") or {})


def read_report(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable report ({exc}); delete it or write elsewhere") from None


def refuse_overwrite(path: Path | None, ident: dict, fix: str) -> None:
    """A ConfigError when ``path`` holds the report of a run of another identity than ``ident`` (each of a
    sweep's jobs would write over the last's); ``fix`` says what to do."""
    if path is None or not path.is_file():
        return
    theirs = report_identity(read_report(path))
    if theirs != ident:
        raise ConfigError(f"{path} holds the report of another run ({differences(ident, theirs)}); {fix}")


def differences(mine: dict, theirs: dict, most: int = 3) -> str:
    """The first ``most`` keys on which two identities differ: ``config.rig_units: 8 here, null there``."""
    a, b = _flat(mine), _flat(theirs)
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k, "(absent)") != b.get(k, "(absent)"))
    shown = [f"{k}: {json.dumps(a.get(k))} here, {json.dumps(b.get(k))} there" for k in keys[:most]]
    return "; ".join(shown) + (f"; {len(keys) - most} more" if len(keys) > most else "")


def _flat(tree, prefix: str = "") -> dict:
    if not isinstance(tree, dict):
        return {prefix[:-1]: tree}
    out: dict = {}
    for k, v in tree.items():
        out |= _flat(v, f"{prefix}{k}.")
    return out


def override_suffix(overrides: list[str]) -> str:
    """``_key=value,key=value`` of the command line's overrides that the stem does not show (sorted;
    output keys, Hydra's and the experiment's left out); a path value by its file name; a suffix longer
    than :data:`MAX_SUFFIX` as ``_cfg-<digest>``; ``""`` without such overrides."""
    parts = []
    for o in overrides:
        key, _, value = o.lstrip("+~").partition("=")
        if key in STEM_KEYS or key.split(".")[0] in OUTPUT_KEYS or key.split("/")[0] in ("hydra", "experiment"):
            continue
        value = value.replace("\\", "")  # Hydra escapes ":" in the overrides it hands a job
        value = Path(value).name if "/" in value else value
        parts.append(f"{key}={value}".replace(" ", ""))
    text = ",".join(sorted(parts))
    if len(text) > MAX_SUFFIX:
        text = "cfg-" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
    return f"_{text}" if text else ""


def report_stem(matrix: str, nodes: int, topology: str, kernel: str, k: int, tag: str, overrides: list[str]) -> str:
    """``<matrix>-n<nodes>-<topology>-<kernel>-k<K>`` and the ``tag``, or the override suffix when the
    run has no tag."""
    return f"{matrix}-n{nodes}-{topology}-{kernel}-k{k}" + (tag or override_suffix(overrides))
