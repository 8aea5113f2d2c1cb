"""``netsparse-train``'s configuration checked before any rank starts: config group choices, value
types and ranges. Each problem is one :class:`~netsparse_torch.errors.ConfigError` (the CLI prints it in
one line and exits 2) instead of Hydra's multi-line composition error or a rank's traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from netsparse_torch.errors import ConfigError

#: The config groups of configs/train.yaml (one YAML per choice in ``configs/<group>/``).
GROUPS = ("dataset", "model", "strategy", "fabric", "cluster", "hw")
#: The config groups of configs/simulate.yaml.
SIMULATE_GROUPS = ("hw", "assumption")

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


def check_group_overrides(overrides: list[str], config_dir: str | Path, groups: tuple[str, ...] = GROUPS) -> None:
    """Every ``group=choice`` of ``groups`` on the command line (each value of a sweep ``group=a,b``) names
    a YAML of ``configs/<group>/``. Other overrides are left to Hydra and :func:`check_values`."""
    for o in _parse(overrides):
        if o.key_or_group not in groups or o.is_delete() or o.package is not None:
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
    if "partition" in cfg:
        from hw_models.bounds import ROW_MODES  # numpy only

        known = (*ROW_MODES, "metis")  # netsparse_torch.partition.PARTITIONERS, which needs scipy
        if str(cfg.partition) not in known:
            raise ConfigError(f"unknown partition {cfg.partition!r}; choose one of {', '.join(known)}")
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
    if "strategy" in cfg:  # a training config: its hardware is valid and given once (hw_models/hardware.py)
        from hw_models.hardware import train_hardware

        train_hardware(cfg)


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


# -- every key on the command line is one the run reads ------------------------------------------------
#: strategy.options.<name> that each strategy reads (its keyword arguments, beyond the run layer's own
#: ``fabric``), whether or not its configs/strategy YAML lists them. A mirror, because the strategies
#: import torch; tests/test_config_keys.py checks it against their signatures and RIG_OPTIONS.
STRATEGY_OPTIONS: dict[str, tuple[str, ...]] = {
    "su": (),
    "sa": (),
    "ds": ("replication",),
    "twoface": ("width", "profile", "memory_limit_bytes"),
    "netsparse": ("n_units", "n_client_units", "batch_size", "pending_capacity", "filter", "coalesce", "mtu",
                  "upper_bytes", "delay_cycles", "overlap", "stage"),
}
#: dataset.params.<name> of dataset=synthetic per dataset.shape: the generators' keywords (a mirror,
#: because importing scipy would cost the check most of a second; checked by tests/test_config_keys.py).
SYNTHETIC_PARAMS: dict[str, tuple[str, ...]] = {
    "powerlaw": ("avg_degree", "exponent"),
    "banded": ("bandwidth", "density"),
    "road": ("drop", "diagonal"),
}
#: Hydra flags that change which config is composed: with them the check leaves every key to Hydra.
OTHER_CONFIG_FLAGS = ("-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir")


def check_override_keys(overrides: list[str], config_dir: str | Path) -> None:
    """Every ``key=value``, ``+key=value``, ``++key=value`` and ``~key`` on the command line names a key
    that the run reads: one of the composed config (for each choice of a swept config group), or one
    that an open section reads (:func:`open_keys`). Hydra would take an unknown ``+key`` silently, and
    refuse a plain typo in several lines. Config groups and ``hydra.*`` keys are left to
    :func:`check_group_overrides` and Hydra."""
    if any(arg.split("=")[0] in OTHER_CONFIG_FLAGS for arg in overrides):
        return
    parsed = _parse(overrides)
    keyed = [o for o in parsed if not _is_group(o, config_dir) and not o.key_or_group.startswith("hydra")
             and o.package is None]
    if not keyed:
        return  # nothing to check: no composition (it costs a fifth of a second)
    for cfg in _compositions(parsed, config_dir):
        known = config_keys(cfg)
        readable = open_keys(cfg, parsed)
        for o in keyed:
            _check_key(o, known, readable, cfg, config_dir)


def _parse(overrides: list[str]) -> list:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        # Only key=value overrides: Hydra's own flags (-m, --cfg job, -cn NAME, ...) are left to Hydra.
        return OverridesParser.create().parse_overrides(
            [o for o in overrides if ("=" in o or o.startswith("~")) and not o.startswith("-")])
    except HydraException as exc:
        raise ConfigError(f"cannot parse the command line: {str(exc).splitlines()[0]}") from None


def _is_group(o, config_dir: str | Path) -> bool:
    return "/" in o.key_or_group or (Path(config_dir) / o.key_or_group).is_dir()


def _compositions(parsed: list, config_dir: str | Path):
    """The config of the command line's group choices, and once more for each other value of a
    swept group (one group varied at a time: what a key depends on is its own group's choice)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    fixed, swept = [], []
    for o in parsed:
        if not _is_group(o, config_dir) or o.key_or_group.startswith("hydra"):
            continue
        if o.is_sweep_override():
            values = list(o.sweep_string_iterator())
            fixed.append(f"{o.key_or_group}={values[0]}")
            swept += [(o.key_or_group, v) for v in values[1:]]
        else:
            fixed.append(o.input_line)
    variants = [fixed] + [[f for f in fixed if not f.startswith(f"{group}=")] + [f"{group}={v}"] for group, v in swept]
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        for groups in variants:
            try:
                cfg = compose("train", overrides=groups)
            except HydraException:  # a combination Hydra refuses: its own error, later
                return
            yield cfg


def config_keys(cfg) -> set[str]:
    """Every dotted key of ``cfg``, the sections too (``strategy``, ``strategy.options``, ...)."""
    from omegaconf import OmegaConf

    def walk(node, prefix: str) -> Iterator[str]:
        for k, v in node.items():
            yield prefix + str(k)
            if isinstance(v, dict):
                yield from walk(v, f"{prefix}{k}.")

    return set(walk(OmegaConf.to_container(cfg, resolve=False), ""))


def open_keys(cfg, parsed: list | None = None) -> set[str]:
    """Keys the run reads that no YAML lists: the options of the chosen strategy, the generator
    parameters of dataset=synthetic, and the hardware fields (``hw``, and ``cluster.hw`` of a modeled cluster)."""
    keys = {f"strategy.options.{name}" for name in STRATEGY_OPTIONS.get(str(cfg.strategy.name), ())}
    if str(cfg.dataset.name) == "synthetic":
        for shape in _values("dataset.shape", cfg, parsed or []):
            keys |= {f"dataset.params.{name}" for name in SYNTHETIC_PARAMS.get(shape, ())}
    if "hw" in cfg.cluster:
        keys |= hardware_keys("cluster.hw.")
    return keys | hardware_keys("hw.")


def hardware_keys(prefix: str) -> set[str]:
    """``<section>`` and ``<section>.<field>`` of the modeled cluster's HardwareParams."""
    import dataclasses

    from hw_models.params import _SECTIONS

    keys = set()
    for section, params in _SECTIONS.items():
        keys.add(prefix + section)
        keys |= {f"{prefix}{section}.{f.name}" for f in dataclasses.fields(params)}
    return keys


def _values(key: str, cfg, parsed: list) -> list[str]:
    """The values ``key`` takes in this run: the command line's (every value of a sweep), else ``cfg``'s."""
    for o in parsed:
        if o.key_or_group == key and not o.is_delete():
            return list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
    from omegaconf import OmegaConf

    return [str(OmegaConf.select(cfg, key))]


def _check_key(o, known: set[str], readable: set[str], cfg, config_dir: str | Path) -> None:
    key = o.key_or_group
    if o.is_add() and key in known:
        raise ConfigError(f"{o.input_line}: {key} is already in the config; set it without the '+': "
                          f"{o.input_line[1:]}")
    if key in known or (key in readable and (o.is_add() or o.is_force_add())):
        return
    if key in readable:
        raise ConfigError(f"{key} is not in the config until you add it: write +{o.input_line}")
    raise ConfigError(unknown_key_message(key, known | readable, cfg, config_dir))


def unknown_key_message(key: str, known: set[str], cfg, config_dir: str | Path) -> str:
    """``unknown key K; the closest known key is C`` (C may belong to another choice of K's config
    group, which the message names), or the keys that K's nearest existing section has."""
    group = key.split(".")[0]
    where = f" (with {group}={cfg[group].name})" if group in GROUPS and "name" in cfg[group] else ""
    candidates = {k: "" for k in known}
    if group in GROUPS:
        for k, choices in other_choice_keys(group, config_dir).items():
            candidates.setdefault(k, f" (with {group}={_one_of(choices)})")
    hit = closest_key(key, candidates)
    if hit == key:  # the key of other choices of its group
        return f"unknown key {key}{where}; only {candidates[hit][len(' (with '):-1]} reads it"
    if hit is not None:
        return f"unknown key {key}{where}; the closest known key is {hit}{candidates[hit]}"
    parent = key.rpartition(".")[0]
    while parent and parent not in known:
        parent = parent.rpartition(".")[0]
    siblings = sorted(k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == parent)
    section = f"the keys under {parent} are" if parent else "the top-level keys are"
    return f"unknown key {key}{where}; no known key is close; {section}: {', '.join(siblings) or 'none'}"


def closest_key(key: str, candidates) -> str | None:
    """The candidate closest to ``key`` (difflib): by the last name, first among the keys of the same
    section (``strategy.widht`` -> ``strategy.width``, not ``strategy.name``), then among every key
    (``model.hiden`` -> ``hidden``). Whole dotted keys would match on their common prefix alone."""
    from difflib import get_close_matches

    parent, _, leaf = key.rpartition(".")
    siblings = {k.rpartition(".")[2]: k for k in candidates if k.rpartition(".")[0] == parent}
    hit = get_close_matches(leaf, list(siblings), n=1, cutoff=0.6)
    if hit:
        return siblings[hit[0]]
    leaves: dict[str, str] = {}
    for k in sorted(candidates, key=lambda k: k.count(".")):  # the shallowest key of a name wins
        leaves.setdefault(k.rpartition(".")[2], k)
    hit = get_close_matches(leaf, list(leaves), n=1, cutoff=0.75)
    return leaves[hit[0]] if hit else None


def _one_of(choices: list[str]) -> str:
    return choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"


def other_choice_keys(group: str, config_dir: str | Path) -> dict[str, list[str]]:
    """The choices of ``group`` that bring each key (``strategy.width`` -> ``[twoface]``), read from the
    YAMLs (for an error message only: the choices are not composed)."""
    from omegaconf import OmegaConf

    out: dict[str, list[str]] = {}
    for path in sorted((Path(config_dir) / group).glob("*.yaml")):
        text = path.read_text()
        prefix = "" if "@package _global_" in text.split("\n", 1)[0] else f"{group}."
        body = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        body.pop("defaults", None)
        found = config_keys(OmegaConf.create({prefix[:-1]: body} if prefix else body))
        if group == "strategy":
            found |= {f"strategy.options.{n}" for n in STRATEGY_OPTIONS.get(path.stem, ())}
        if group == "cluster" and "hw" in body:
            found |= hardware_keys("cluster.hw.")
        for k in found:
            out.setdefault(k, []).append(path.stem)
    return out
