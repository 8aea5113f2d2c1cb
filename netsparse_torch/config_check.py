"""``netsparse-train``'s values checked before any rank starts: types and ranges. Each problem is one
:class:`~netsparse_torch.errors.ConfigError` (the CLI prints it in one line and exits 2) instead of a
rank's traceback. The keys and group choices of every CLI's command line: :mod:`netsparse_torch.config_keys`.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from hw_models.params import check_flag
from netsparse_torch.errors import ConfigError

#: The config groups of configs/train.yaml (one YAML per choice in ``configs/<group>/``).
GROUPS = ("dataset", "model", "strategy", "fabric", "cluster", "hw")

#: Keys (dotted) and their types; the range each must satisfy and how to say it.
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
    "log_every": (int, ">= 1", lambda v: v >= 1),
    "rig.timeout_s": (float, "> 0", lambda v: v > 0),
    "metis.seed": (int, ">= 0", lambda v: v >= 0),
    "dataset.split": (int, ">= 0", lambda v: v >= 0),  # the heterophilous datasets' mask column
    "fabric.queue_depth": (int, ">= 1", lambda v: v >= 1),  # fabric=switch's frames per bounded queue
}
_ABSENT = object()
FLAGS = ("resume", "normalize_features", "strategy.options.filter", "strategy.options.coalesce", "fabric.cache",
         "fabric.concatenation", "dataset.weighted", "dataset.verify")


def in_sweep() -> bool:
    """Whether this is a job of a Hydra sweep (``-m``), on any launcher."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def set_on_command_line(key: str) -> bool:
    """Whether the command line (Hydra's task overrides) set ``key``: a default is not the user's choice."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return False
    return any(o.lstrip("+~").split("=", 1)[0] == key for o in HydraConfig.get().overrides.task)


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


#: The values of ``device=`` (netsparse_torch/run/device.py resolves them once torch is loaded).
DEVICES = ("auto", "cpu", "cuda")


def check_values(cfg):
    """Types and ranges of the top-level training keys (``lr=abc`` is a string to Hydra); for a training
    config, the run's one ``HardwareParams`` (built here, valid, and handed on), else None."""
    if "device" in cfg and str(cfg.device) not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}, got {cfg.device!r}")
    if "partition" in cfg:
        from hw_models.bounds import ROW_MODES  # numpy only

        known = (*ROW_MODES, "metis")  # netsparse_torch.partition.PARTITIONERS, which needs scipy
        if str(cfg.partition) not in known:
            raise ConfigError(f"unknown partition {cfg.partition!r}; choose one of {', '.join(known)}")
    for key, (kind, rule, ok) in NUMBERS.items():
        value = OmegaConf.select(cfg, key, default=_ABSENT)
        if value is _ABSENT:
            continue
        wrong = isinstance(value, bool) or not isinstance(value, int | float)
        if wrong or (kind is int and not isinstance(value, int)):
            what = "an integer" if kind is int else "a number"
            raise ConfigError(f"{key} must be {what} {rule}, got {value!r}")
        if not ok(value):
            raise ConfigError(f"{key} must be {rule}, got {value}")
    for key in FLAGS:
        value = OmegaConf.select(cfg, key)
        if value is not None:
            check_flag(key, value)
    if "threads" in cfg:
        check_threads(cfg.threads)
    if cfg.get("patience", 0) > 0 and cfg.get("eval_every", 0) == 0:
        raise ConfigError(f"patience={cfg.patience} needs evaluations during training: set eval_every=N (N >= 1)")
    check_model_options(cfg.get("model") or {})
    if str((cfg.get("dataset") or {}).get("name")) == "paper":
        check_paper_dataset(cfg.dataset, str(cfg.get("partition", "rows")))
    if "strategy" in cfg:  # a training config: its hardware is valid and given once (hw_models/hardware.py)
        from hw_models.hardware import train_hardware

        return train_hardware(cfg)
    return None


METIS_MAX_NNZ = 5_000_000
"""Largest analog ``partition=metis`` takes (our choice). METIS needs the whole graph in one process: the
launcher generates it with every node's data (about 60 B per nonzero with the symmetrised copy METIS
reads, plus 4 B per feature and node), and every rank then cuts its shard from that copy."""


def check_paper_dataset(dataset, partition: str = "rows") -> tuple:
    """``dataset=paper``'s matrix, scale and node data, and metis's limit: numbers only, nothing generated,
    before torch loads (:class:`~netsparse_torch.partition.AnalogDataset` checks the same). Returns
    ``(PaperMatrix, scale)``."""
    from hw_models import analogs  # numpy only

    if dataset.get("matrix") is None:
        raise ConfigError(f"dataset=paper needs dataset.matrix=<one of {', '.join(analogs.PAPER_MATRICES)}>")
    m, scale = paper_analog(str(dataset["matrix"]), dataset.get("scale", 1.0))
    features, classes = dataset.get("num_features", 16), dataset.get("num_classes", 4)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (features, classes)) or features < 1 or classes < 2:
        raise ConfigError(f"dataset=paper needs num_features >= 1 and num_classes >= 2 (integers), got "
                          f"{features!r} and {classes!r}")
    if partition == "metis":
        check_paper_metis(m, scale)
    return m, scale


def paper_analog(matrix: str, scale) -> tuple:
    """``(PaperMatrix, scale)`` of ``dataset.matrix`` and ``dataset.scale``, or one ConfigError."""
    from hw_models import analogs

    if matrix not in analogs.PAPER_MATRICES:
        raise ConfigError(f"unknown dataset.matrix {matrix!r}; choose one of {', '.join(analogs.PAPER_MATRICES)}")
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise ConfigError(f"dataset.scale must be a number in (0, 1], got {scale!r}") from None
    if not 0 < scale <= 1:  # also NaN
        raise ConfigError(f"dataset.scale must be in (0, 1], got {scale:g}")
    m = analogs.PAPER_MATRICES[matrix]
    analogs.scaled_rows(m, scale)  # the generator's fewest rows
    return m, scale


def check_paper_metis(m, scale: float) -> None:
    approx = int(round(m.nnz * scale))
    if approx > METIS_MAX_NNZ:
        raise ConfigError(f"partition=metis needs the whole graph in one process; paper:{m.name}@{scale!r} has "
                          f"about {approx / 1e6:.3g} M nonzeros, above the limit of {METIS_MAX_NNZ / 1e6:g} M for "
                          "dataset=paper: use partition=rows or nnz (the analog's rows are laid out in the "
                          "paper's row blocks already)")


#: ``threads=auto``: OMP_NUM_THREADS, else cores / local ranks (netsparse_torch/run/threads.py).
AUTO_THREADS = "auto"


def check_threads(setting) -> int | str:
    """``threads=``: ``auto`` or a whole number >= 1."""
    if setting == AUTO_THREADS:
        return setting
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 1:
        raise ConfigError(f"threads must be auto or an integer >= 1, got {setting!r}")
    return setting


def omp_threads(environ) -> int | None:
    """``OMP_NUM_THREADS`` as a whole number >= 1, or None when it is unset. Checked before torch loads:
    libgomp would print its own complaint about a bad value, and ignore it."""
    value = environ.get("OMP_NUM_THREADS", "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"OMP_NUM_THREADS must be a whole number >= 1, got {value!r}: fix it, or unset it")
    return int(value)


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
