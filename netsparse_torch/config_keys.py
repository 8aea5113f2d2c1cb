"""Every override on a Hydra command line names a key or a config group that its CLI reads, checked
before any heavy import: ``netsparse-train``, ``netsparse-simulate`` and ``netsparse-partition`` each
declare theirs (:data:`TRAIN`, :data:`SIMULATE`, :data:`PARTITION`), and one check
(:func:`check_command_line`) refuses the rest in one :class:`~netsparse_torch.errors.ConfigError` that
names the closest known key. Hydra would take an unknown ``+key`` silently, and refuse a plain typo in
several lines.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from netsparse_torch.config_check import GROUPS, config_dir, group_choices
from netsparse_torch.errors import ConfigError


@dataclass(frozen=True)
class Cli:
    """What a Hydra CLI reads: its config (``configs/<config>.yaml``), the config groups of its defaults
    list (``group=choice``), the groups a command line may add (``+group=choice``), and the keys it
    reads that no YAML lists (``open_keys(cfg, parsed overrides)``: the ``+key=`` it takes)."""

    prog: str
    config: str
    groups: tuple[str, ...]
    open_keys: Callable
    add_groups: tuple[str, ...] = ()
    file_groups: tuple[str, ...] = ()
    """Groups whose choice may be a YAML file instead (``hw=path/to/file.yaml``): the command line's
    ``<group>=<file>`` becomes ``<group>_file=<absolute path>`` (:func:`file_choices`), a key of the config."""
    paths: tuple[str, ...] = ()
    """Keys that name a file or folder: a relative one is relative to the directory the command ran in
    (:func:`netsparse_torch.cli.hydra_app.from_launch_dir`)."""


# -- the keys each CLI reads that no YAML lists --------------------------------------------------------
#: strategy.options.<name> that each strategy reads (its keyword arguments, beyond the run layer's own
#: ``fabric``), whether or not its configs/strategy YAML lists them. A mirror, because the strategies
#: import torch; tests/test_config_keys.py checks it against their signatures and RIG_OPTIONS.
STRATEGY_OPTIONS: dict[str, tuple[str, ...]] = {
    "su": (),
    "sa": (),
    "ds": ("replication",),
    "twoface": ("width", "profile", "memory_limit_bytes"),
    "netsparse": ("rig_units", "rig_client_units", "batch_size", "pending_capacity", "filter", "coalesce", "mtu",
                  "upper_bytes", "delay_cycles", "overlap", "stage"),
}
#: The generators' keywords per synthetic shape (``dataset.params.<name>`` of dataset=synthetic,
#: ``synthetic.params.<name>`` of the simulator). A mirror, because importing scipy would cost the check
#: most of a second; checked by tests/test_config_keys.py.
SYNTHETIC_PARAMS: dict[str, tuple[str, ...]] = {
    "powerlaw": ("avg_degree", "exponent"),
    "banded": ("bandwidth", "density"),
    "road": ("drop", "diagonal"),
}


#: Keys that configs of earlier versions held, each refused naming its one spelling now (the field's in
#: ``HardwareParams``: ``snic.rig_units``, ``snic.rig_client_units``, ``property_cache.size_bytes``).
RENAMED: dict[str, str] = {
    "strategy.options.n_units": "strategy.options.rig_units",
    "strategy.options.n_client_units": "strategy.options.rig_client_units",
    "fabric.capacity_bytes": "fabric.size_bytes",
    "cache_bytes": "cache_size_bytes",
}


def train_open_keys(cfg, parsed: list) -> set[str]:
    """The options of the chosen strategy, the generator parameters of dataset=synthetic, and the
    hardware fields (``hw``, and ``cluster.hw`` of a modeled cluster)."""
    keys = {f"strategy.options.{name}" for name in STRATEGY_OPTIONS.get(str(cfg.strategy.name), ())}
    keys |= dataset_params(cfg, parsed)
    if "hw" in cfg.cluster:
        keys |= hardware_keys("cluster.hw.")
    return keys | hardware_keys("hw.")


def dataset_params(cfg, parsed: list) -> set[str]:
    """``dataset.params.<name>`` of each shape that dataset=synthetic takes in this run."""
    if str(cfg.dataset.name) != "synthetic":
        return set()
    return {f"dataset.params.{name}" for shape in _values("dataset.shape", cfg, parsed)
            for name in SYNTHETIC_PARAMS.get(shape, ())}


def simulate_open_keys(cfg, parsed: list) -> set[str]:
    """The hardware fields (``hw``) and, for ``matrix=synthetic[:shape]``, the shape's generator
    parameters (``synthetic.params``)."""
    shapes = set()
    for matrix in _values("matrix", cfg, parsed):
        if matrix.startswith("synthetic:"):
            shapes.add(matrix.split(":", 1)[1])
        elif matrix == "synthetic":
            shapes |= set(_values("synthetic.shape", cfg, parsed))
    params = {f"synthetic.params.{name}" for shape in shapes for name in SYNTHETIC_PARAMS.get(shape, ())}
    return params | hardware_keys("hw.")


def hardware_keys(prefix: str) -> set[str]:
    """``<section>`` and ``<section>.<field>`` of the modeled cluster's HardwareParams."""
    import dataclasses

    from hw_models.params import _SECTIONS

    keys = set()
    for section, params in _SECTIONS.items():
        keys.add(prefix + section)
        keys |= {f"{prefix}{section}.{f.name}" for f in dataclasses.fields(params)}
    return keys


#: The dataset's files (``dataset.path``: an .mtx file or a partitioned dataset's folder; ``root``: the data
#: folder; ``cache_dir``: processed Planetoid files).
DATASET_PATHS = ("dataset.path", "dataset.root", "dataset.cache_dir")
TRAIN = Cli("netsparse-train", "train", GROUPS, train_open_keys, add_groups=("experiment",),
            paths=(*DATASET_PATHS, "strategy.profile", "strategy.options.profile", "report_path",
                   "checkpoint_dir"))
SIMULATE = Cli("netsparse-simulate", "simulate", ("hw", "assumption"), simulate_open_keys, add_groups=("experiment",),
               file_groups=("hw",), paths=("analog_cache", "report_path", "report_dir"))
PARTITION = Cli("netsparse-partition", "partition", ("dataset",), dataset_params, paths=(*DATASET_PATHS, "out"))


# -- the check -----------------------------------------------------------------------------------------
#: Hydra flags that change which config is composed. ``--config-dir`` adds a folder of the user's to the search
#: path (its groups' choices are checked with this package's). With another primary config (``-cn``, ``-cp``) the
#: command line is left to Hydra, and the task checks the composed config (:func:`check_composed_config`).
CONFIG_NAME_FLAGS = ("-cn", "--config-name")
CONFIG_PATH_FLAGS = ("-cp", "--config-path")
ADDED_CONFIG_FLAGS = ("-cd", "--config-dir")
OTHER_CONFIG_FLAGS = (*CONFIG_NAME_FLAGS, *CONFIG_PATH_FLAGS, *ADDED_CONFIG_FLAGS)


def _flag_values(args: list[str], flags: tuple[str, ...]):
    """``(position, flag, value, width)`` of each ``flag value`` (width 2) or ``flag=value`` (width 1) in ``args``
    whose flag is one of ``flags``: Hydra takes both spellings."""
    i = 0
    while i < len(args):
        flag, sep, value = args[i].partition("=")
        if flag not in flags:
            i += 1
            continue
        if not sep and i + 1 == len(args):
            raise ConfigError(f"{flag} needs a value: {flag} VALUE or {flag}=VALUE")
        width = 1 if sep else 2
        yield i, flag, value if sep else args[i + 1], width
        i += width


def _config_folder(flag: str, value: str) -> Path:
    folder = Path(value).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"{flag} {folder}: no such folder of configs")
    return folder


def config_path_args(args: list[str]) -> list[str]:
    """``args`` with a ``--config-path``/``-cp`` folder (a whole config folder of the user's) made absolute from
    the directory the command ran in, and this package's configs put on Hydra's search path behind it, so that a
    config there can start with ``defaults: [train, _self_]``. Hydra reads a relative ``-cp`` from the
    folder of the module that declares the app (inside the installed package), never what a user means."""
    out, done = [], 0
    for i, flag, value, width in _flag_values(args, CONFIG_PATH_FLAGS):
        out += args[done:i] + [flag, str(_config_folder(flag, value))]
        done = i + width
    if done == 0:
        return list(args)
    out += args[done:]
    if not any(a.lstrip("+").startswith("hydra.searchpath=") for a in out):
        out.append(f"hydra.searchpath=[file://{Path(config_dir()).resolve()}]")
    return out


def user_config_dirs(args: list[str], config: str) -> tuple[str, ...] | None:
    """The folders ``--config-dir``/``-cd`` add to the search path (absolute), or None when the command line
    composes another primary config than the CLI's ``config`` (``--config-name`` of another, ``--config-path``:
    Hydra checks that one)."""
    dirs = []
    for _, flag, value, _ in _flag_values(args, OTHER_CONFIG_FLAGS):
        if flag in CONFIG_NAME_FLAGS and value.removesuffix(".yaml") == config:
            continue  # the CLI's own config, named
        if flag not in ADDED_CONFIG_FLAGS:
            return None
        dirs.append(str(_config_folder(flag, value)))
    return tuple(dirs)


def _dirs(config_dir: str | Path | tuple) -> tuple[Path, ...]:
    """The config folders searched: this package's first, then the user's (``--config-dir``)."""
    return tuple(Path(d) for d in config_dir) if isinstance(config_dir, tuple) else (Path(config_dir),)


def _choices(config_dir: str | Path | tuple, group: str) -> list[str]:
    return sorted({c for d in _dirs(config_dir) for c in group_choices(d, group)})


def file_choices(args: list[str], cli: Cli) -> list[str]:
    """``args`` with each ``<group>=<file>.yaml`` of ``cli.file_groups`` (every value of a sweep a YAML
    file) as ``<group>_file=<absolute path>``: absolute, because a launcher's job may start elsewhere."""
    out = []
    for arg in args:
        group, sep, value = arg.partition("=")
        files = value.split(",")
        if sep and group in cli.file_groups and all(f.endswith((".yaml", ".yml")) for f in files):
            arg = f"{group}_file=" + ",".join(str(Path(f).expanduser().resolve()) for f in files)
        out.append(arg)
    return out


def check_command_line(args: list[str], cli: Cli) -> None:
    """Every config group choice and every key of ``args`` (a CLI's ``sys.argv[1:]``) is one ``cli`` reads
    (a group's YAML file, ``hw=path/to/file.yaml``, as the key :func:`file_choices` makes of it)."""
    args = file_choices(args, cli)
    added = user_config_dirs(args, cli.config)
    if added is None:
        return
    dirs = (config_dir(), *added)
    check_group_overrides(args, dirs, cli)
    check_override_keys(args, dirs, cli)


def check_composed_config(cfg, cli: Cli) -> None:
    """What Hydra composed from the user's files, which the command line's check cannot see, checked in the
    task against ``cli``'s own configs: a primary config of the user's (``-cd DIR -cn myexp``, ``-cp DIR``)
    against ``cli.config`` with the same group choices, and a group choice from the user's folder
    (``dataset=mine``) against this package's YAML of the group that its ``name`` names
    (``configs/dataset/mtx.yaml``). A key that ``cli`` does not read (a typo: ``epcohs: 3`` would leave
    ``epochs`` at its default) and a key the run reads but the file lacks are each one :class:`ConfigError`.
    Sections of a config group that a primary config writes inline, without choosing it, are its own."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return
    hc = HydraConfig.get()
    own = Path(config_dir()).resolve()
    files = [Path(s.path).resolve() for s in hc.runtime.config_sources if s.schema == "file"]
    main = next((Path(s.path).resolve() for s in hc.runtime.config_sources if s.provider == "main"), own)
    dirs = tuple(str(d) for d in dict.fromkeys([own, *files]))
    chosen = {g: str(c) for g, c in hc.runtime.choices.items() if not g.startswith("hydra") and c is not None}
    parsed = _parse(list(hc.overrides.task))
    if hc.job.config_name != cli.config or main != own:
        primary = _file_of(dict.fromkeys([str(main), *dirs]), f"{hc.job.config_name}.yaml") or hc.job.config_name
        _check_primary(cfg, cli, primary, chosen, dirs, parsed)
    for group, choice in chosen.items():
        if group in cli.groups and not (own / group / f"{choice}.yaml").is_file():
            _check_group_file(cfg, cli, group, choice, chosen, dirs, parsed)


def _file_of(dirs, name: str) -> str | None:
    return next((str(Path(d) / name) for d in dirs if (Path(d) / name).is_file()), None)


def _choice_overrides(chosen: dict[str, str], cli: Cli) -> tuple[str, ...]:
    return tuple(f"{'+' if g in cli.add_groups else ''}{g}={c}" for g, c in chosen.items())


def _check_primary(cfg, cli: Cli, where: str, chosen: dict[str, str], dirs: tuple[str, ...], parsed: list) -> None:
    for group, choice in chosen.items():
        if group not in cli.groups + cli.add_groups:
            raise ConfigError(f"your config {where} chooses {group}={choice}: {cli.prog} reads no config group "
                              f"{group}; its groups are {', '.join([*cli.groups, *cli.add_groups])}")
    groups = _choice_overrides(chosen, cli)
    ref = _compose(dirs, cli.config, groups)
    if ref is None:
        raise ConfigError(f"your config {where} chooses {', '.join(groups)}, which {cli.config}.yaml of "
                          f"{cli.prog} cannot compose")
    inline = tuple(g for g in cli.groups if g not in chosen and g in cfg)  # the user's own sections
    _compare(cfg, ref, cli, where, dirs, parsed, f"(as in {cli.config}.yaml), or start it with defaults: "
             f"[{cli.config}, _self_]", lambda k: k.split(".")[0] not in inline)


def _check_group_file(cfg, cli: Cli, group: str, choice: str, chosen: dict[str, str], dirs: tuple[str, ...],
                      parsed: list) -> None:
    from omegaconf import OmegaConf

    base = OmegaConf.select(cfg, f"{group}.name")
    if base is None or not (Path(dirs[0]) / group / f"{base}.yaml").is_file():
        return  # nothing of this package's to compare it with
    ref = _compose(dirs, cli.config, _choice_overrides({**chosen, group: str(base)}, cli))
    where = _file_of(dirs, f"{group}/{choice}.yaml") or f"{group}={choice}"
    if ref is not None:
        _compare(cfg, ref, cli, where, dirs, parsed, f"(as in {group}/{base}.yaml)",
                 lambda k: k.startswith(f"{group}."))


def _compare(cfg, ref, cli: Cli, where: str, dirs: tuple[str, ...], parsed: list, how: str, within) -> None:
    """The keys of ``cfg`` for which ``within`` holds against those of ``ref``: one that ``cli`` does not read,
    then one missing (``how`` says where to see it), each a :class:`ConfigError` naming ``where``."""

    def checked(keys: set[str]) -> list[str]:  # without keys under a listed one
        keys = {k for k in keys if within(k)}
        return sorted(k for k in keys if k.rpartition(".")[0] not in keys)

    known, have = config_keys(ref), config_keys(cfg)
    readable = _open_keys(cli, cfg, ref, parsed)
    extra = checked(have - known - readable)
    if extra:  # first: a misspelt key is also a missing one, and this error names both
        raise ConfigError(f"your config {where}: {unknown_key_message(extra[0], known | readable, ref, dirs[0], cli)}")
    missing = checked(known - have)
    if missing:
        raise ConfigError(f"your config {where} lacks {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}, "
                          f"which {cli.prog} reads; add {'it' if len(missing) == 1 else 'them'} {how}")


def _open_keys(cli: Cli, cfg, ref, parsed: list) -> set[str]:
    """``cli.open_keys`` of the user's config, or of ``ref`` where an inline section of the user's lacks what
    they depend on (``strategy.name``)."""
    from omegaconf.errors import OmegaConfBaseException

    try:
        return cli.open_keys(cfg, parsed)
    except OmegaConfBaseException:
        return cli.open_keys(ref, parsed)


def check_group_overrides(overrides: list[str], config_dir: str | Path | tuple, cli: Cli = TRAIN) -> None:
    """Every ``group=choice`` (each value of a sweep ``group=a,b``) names a YAML of ``<config dir>/<group>/``
    (``config_dir``: a folder, or this package's and the user's, :func:`user_config_dirs`) of a group that
    ``cli`` reads, with a ``+`` exactly when the group is one the command line adds. Other overrides are
    left to :func:`check_override_keys`."""
    for o in _parse(overrides):
        group = o.key_or_group
        if not _is_group(o, config_dir) or group.startswith("hydra") or o.is_delete() or o.package is not None:
            continue
        if group not in cli.groups + cli.add_groups:
            reads = ", ".join([*cli.groups, *(f"+{g}" for g in cli.add_groups)])
            raise ConfigError(f"{o.input_line}: {cli.prog} reads no config group {group}; its groups are {reads}")
        if group in cli.add_groups and not o.is_add():
            raise ConfigError(f"{o.input_line}: {group} is added to the config: write +{o.input_line}")
        if group in cli.groups and o.is_add():
            raise ConfigError(f"{o.input_line}: {group} is already in the config; choose it without the '+': "
                              f"{o.input_line.lstrip('+')}")
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
        choices = experiments(_dirs(config_dir)[0], cli) if group == "experiment" else _choices(config_dir, group)
        for v in values:
            if v not in choices:
                raise ConfigError(f"unknown {group} {v!r}; choose one of {', '.join(choices)}")


def experiments(config_dir: str | Path, cli: Cli) -> list[str]:
    """The ``+experiment=`` choices of ``cli``: one folder holds both CLIs' experiments, and those that
    choose a training dataset (``override /dataset`` in their defaults list) are netsparse-train's."""
    from omegaconf import OmegaConf

    def trains(name: str) -> bool:
        defaults = OmegaConf.load(Path(config_dir) / "experiment" / f"{name}.yaml").get("defaults") or []
        return any(OmegaConf.is_dict(d) and "override /dataset" in d for d in defaults)

    return [n for n in group_choices(config_dir, "experiment") if trains(n) == (cli.config == "train")]


def check_override_keys(overrides: list[str], config_dir: str | Path | tuple, cli: Cli = TRAIN) -> None:
    """Every ``key=value``, ``+key=value``, ``++key=value`` and ``~key`` on the command line names a key
    that the run reads: one of the composed config (for each choice of a swept config group), or one
    that ``cli.open_keys`` names. Config groups and ``hydra.*`` keys are left to
    :func:`check_group_overrides` and Hydra."""
    parsed = _parse(overrides)
    keyed = [o for o in parsed if not _is_group(o, config_dir) and not o.key_or_group.startswith("hydra")
             and o.package is None]
    for o in keyed:
        new = RENAMED.get(o.key_or_group.lstrip("+~"))
        if new is not None:
            raise ConfigError(f"{o.key_or_group} is now {new}: write {new}=... (one spelling per hardware field)")
    if not keyed:
        return  # nothing to check: no composition (it costs a fifth of a second)
    for cfg in _compositions(parsed, config_dir, cli.config):
        known = config_keys(cfg)
        readable = cli.open_keys(cfg, parsed)
        for o in keyed:
            _check_key(o, known, readable, cfg, config_dir, cli)


def _parse(overrides: list[str]) -> list:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        # Only key=value overrides: Hydra's own flags (-m, --cfg job, -cn NAME, ...) are left to Hydra.
        return OverridesParser.create().parse_overrides(
            [o for o in overrides if ("=" in o or o.startswith("~")) and not o.startswith("-")])
    except HydraException as exc:
        raise ConfigError(f"cannot parse the command line: {str(exc).splitlines()[0]}") from None


def _is_group(o, config_dir: str | Path | tuple) -> bool:
    return "/" in o.key_or_group or any((d / o.key_or_group).is_dir() for d in _dirs(config_dir))


def _compositions(parsed: list, config_dir: str | Path | tuple, config: str) -> Iterator:
    """The config of the command line's group choices, and once more for each other value of a
    swept group (one group varied at a time: what a key depends on is its own group's choice)."""
    fixed, swept = [], []
    for o in parsed:
        if not _is_group(o, config_dir) or o.key_or_group.startswith("hydra"):
            continue
        if o.is_sweep_override():
            values = list(o.sweep_string_iterator())
            fixed.append(f"{o.input_line.split('=')[0]}={values[0]}")
            swept += [(o.input_line.split("=")[0], v) for v in values[1:]]
        else:
            fixed.append(o.input_line)
    variants = [fixed] + [[f for f in fixed if not f.startswith(f"{group}=")] + [f"{group}={v}"] for group, v in swept]
    for groups in variants:
        cfg = _compose(tuple(str(d) for d in _dirs(config_dir)), config, tuple(groups))
        if cfg is None:  # a combination Hydra refuses: its own error, in one line (cli/hydra_app.py)
            return
        yield cfg


@functools.lru_cache(maxsize=64)
def _compose(dirs: tuple[str, ...], config: str, groups: tuple[str, ...]):
    """``config`` of the first of ``dirs`` (the others on the search path) composed with the group choices
    ``groups`` (read only); None where Hydra refuses them."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.singleton import Singleton
    from hydra.errors import HydraException

    search = [f"hydra.searchpath=[{','.join('file://' + d for d in dirs[1:])}]"] if dirs[1:] else []
    app = Singleton._instances.pop(GlobalHydra, None)  # inside a running app (check_composed_config): put back
    try:
        with initialize_config_dir(config_dir=dirs[0], version_base="1.3"):
            try:
                return compose(config, overrides=[*search, *groups])
            except HydraException:
                return None
    finally:
        if app is not None:
            Singleton._instances[GlobalHydra] = app


def config_keys(cfg) -> set[str]:
    """Every dotted key of ``cfg``, the sections too (``strategy``, ``strategy.options``, ...)."""
    from omegaconf import OmegaConf

    def walk(node, prefix: str) -> Iterator[str]:
        for k, v in node.items():
            yield prefix + str(k)
            if isinstance(v, dict):
                yield from walk(v, f"{prefix}{k}.")

    return set(walk(OmegaConf.to_container(cfg, resolve=False), ""))


def _values(key: str, cfg, parsed: list) -> list[str]:
    """The values ``key`` takes in this run: the command line's (every value of a sweep), else ``cfg``'s."""
    for o in parsed:
        if o.key_or_group == key and not o.is_delete():
            return [str(v) for v in (o.sweep_iterator() if o.is_sweep_override() else [o.value()])]
    from omegaconf import OmegaConf

    return [str(OmegaConf.select(cfg, key))]


def _check_key(o, known: set[str], readable: set[str], cfg, config_dir: str | Path, cli: Cli) -> None:
    key = o.key_or_group
    if o.is_add() and key in known:
        raise ConfigError(f"{o.input_line}: {key} is already in the config; set it without the '+': "
                          f"{o.input_line[1:]}")
    if key in known or (key in readable and (o.is_add() or o.is_force_add())):
        return
    if key in readable:
        raise ConfigError(f"{key} is not in the config until you add it: write +{o.input_line}")
    raise ConfigError(unknown_key_message(key, known | readable, cfg, config_dir, cli))


def unknown_key_message(key: str, known: set[str], cfg, config_dir: str | Path, cli: Cli = TRAIN) -> str:
    """``unknown key K; the closest known key is C`` (C may belong to another choice of K's config
    group, which the message names), or the keys that K's nearest existing section has."""
    group = key.split(".")[0]
    where = f" (with {group}={cfg[group].name})" if group in cli.groups and "name" in cfg[group] else ""
    candidates = {k: "" for k in known}
    if group in cli.groups:
        for k, choices in other_choice_keys(group, _dirs(config_dir)[0]).items():
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
