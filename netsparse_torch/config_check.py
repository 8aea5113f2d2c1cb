"""``netsparse-train``'s configuration checked before any rank starts: config group choices, value
types and ranges. Each problem is one :class:`~netsparse_torch.errors.ConfigError` (the CLI prints it in
one line and exits 2) instead of Hydra's multi-line composition error or a rank's traceback.
"""

from __future__ import annotations

from pathlib import Path

from netsparse_torch.errors import ConfigError

#: The config groups of configs/train.yaml (one YAML per choice in ``configs/<group>/``).
GROUPS = ("dataset", "model", "strategy", "fabric", "cluster")

#: Top-level keys and their types; the range each must satisfy and how to say it.
NUMBERS: dict[str, tuple[type, str, object]] = {
    "world_size": (int, ">= 1", lambda v: v >= 1),
    "hidden": (int, ">= 1", lambda v: v >= 1),
    "epochs": (int, ">= 0", lambda v: v >= 0),
    "seed": (int, ">= 0", lambda v: v >= 0),
    "checkpoint_every": (int, ">= 0", lambda v: v >= 0),
    "eval_every": (int, ">= 0", lambda v: v >= 0),
    "patience": (int, ">= 0", lambda v: v >= 0),
    "lr": (float, "> 0", lambda v: v > 0),
    "weight_decay": (float, ">= 0", lambda v: v >= 0),
    "dropout": (float, "in [0, 1)", lambda v: 0 <= v < 1),
    "timeout_s": (float, "> 0", lambda v: v > 0),
}
FLAGS = ("resume", "normalize_features")


def config_dir() -> str:
    """The Hydra configs of every CLI (train, simulate, partition): installed packages carry
    ``netsparse_torch/configs``; a source checkout has ``configs/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "configs", here.parent / "configs"):
        if (candidate / "train.yaml").is_file():
            return str(candidate)
    raise RuntimeError("netsparse_torch: cannot find the Hydra configs (configs/train.yaml)")


def group_choices(config_dir: str | Path, group: str) -> list[str]:
    return sorted(p.stem for p in (Path(config_dir) / group).glob("*.yaml"))


def check_group_overrides(overrides: list[str], config_dir: str | Path) -> None:
    """Every ``group=choice`` on the command line (each value of a sweep ``group=a,b``) names a YAML
    of ``configs/<group>/``. Other overrides are left to Hydra and :func:`check_values`."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        # Only key=value overrides: Hydra's own flags (-m, --cfg job, -cn NAME, ...) are left to Hydra.
        parsed = OverridesParser.create().parse_overrides([o for o in overrides if "=" in o and not o.startswith("-")])
    except HydraException as exc:
        raise ConfigError(f"cannot parse the command line: {str(exc).splitlines()[0]}") from None
    for o in parsed:
        if o.key_or_group not in GROUPS or o.is_delete() or o.package is not None:
            continue
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
        choices = group_choices(config_dir, o.key_or_group)
        for v in values:
            if v not in choices:
                raise ConfigError(f"unknown {o.key_or_group} {v!r}; choose one of {', '.join(choices)}")


#: The values of ``device=`` (netsparse_torch/run/device.py resolves them once torch is loaded).
DEVICES = ("auto", "cpu", "cuda")


def check_values(cfg) -> None:
    """Types and ranges of the top-level training keys (``lr=abc`` is a string to Hydra)."""
    if "device" in cfg and str(cfg.device) not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}, got {cfg.device!r}")
    for key, (kind, rule, ok) in NUMBERS.items():
        if key not in cfg:
            continue
        value = cfg[key]
        wrong = isinstance(value, bool) or not isinstance(value, int | float)
        if wrong or (kind is int and not isinstance(value, int)):
            what = "an integer" if kind is int else "a number"
            raise ConfigError(f"{key} must be {what} {rule}, got {value!r}")
        if not ok(value):
            raise ConfigError(f"{key} must be {rule}, got {value}")
    for key in FLAGS:
        if key in cfg and not isinstance(cfg[key], bool):
            raise ConfigError(f"{key} must be true or false, got {cfg[key]!r}")
    if cfg.get("patience", 0) > 0 and cfg.get("eval_every", 0) == 0:
        raise ConfigError(f"patience={cfg.patience} needs evaluations during training: set eval_every=N (N >= 1)")
    check_model_options(cfg.get("model") or {})


def check_model_options(model) -> None:
    """GAT's heads and attention dropout, before any rank builds the layers (the same messages as
    ``nn.gat``, which checks them again for library users)."""
    for key in ("heads", "out_heads"):
        value = model.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"model.{key}: GAT heads must be an integer >= 1, got {value!r}")
    p = model.get("attention_dropout")
    if p is not None and (isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0):
        raise ConfigError(f"model.attention_dropout: GAT attention dropout must be a probability in [0, 1], got {p!r}")
