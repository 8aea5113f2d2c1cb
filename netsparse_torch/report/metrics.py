"""Tracked per-epoch metrics: ``logger=none|csv|tensorboard`` of ``netsparse-train``.

Rank 0 writes one record per epoch into the run's output directory (the Hydra run directory):

- ``csv``: ``metrics.csv`` with the columns :data:`COLUMNS`, one row per epoch; an evaluation column
  is empty in epochs without an evaluation (by default only the last epoch is evaluated).
- ``tensorboard``: event files (``torch.utils.tensorboard``) with one scalar series per column
  (tag = column name, step = epoch); needs the optional ``tensorboard`` package
  (``pip install 'netsparse_torch[tensorboard]'``).

Values of one epoch may arrive in several calls (training numbers first, an evaluation after):
:meth:`MetricsLogger.log` merges them, and a CSV row is written once the next epoch starts or the
logger closes. The JSON report does not change.
"""

from __future__ import annotations

import csv
from pathlib import Path

from netsparse_torch.errors import ConfigError

LOGGERS = ("none", "csv", "tensorboard")

#: Columns of ``metrics.csv`` (and TensorBoard tags): the epoch (0-based, as in the report), its
#: training loss, its wall time (max over ranks, seconds), the feature bytes its gathers moved (all
#: ranks), and the accuracies of an evaluation after that epoch.
COLUMNS = ("epoch", "loss", "time_s", "feature_bytes", "train_acc", "val_acc", "test_acc",
           "train_roc_auc", "val_roc_auc", "test_roc_auc")  # ROC-AUC only for binary tasks (empty otherwise)


def check_logger(name: str) -> None:
    """One :class:`ConfigError` before any rank starts: an unknown logger, or tensorboard missing."""
    if name not in LOGGERS:
        raise ConfigError(f"unknown logger {name!r}; choose one of {', '.join(LOGGERS)}")
    if name == "tensorboard":
        try:
            import tensorboard  # noqa: F401
        except ImportError:
            raise ConfigError("logger=tensorboard needs the tensorboard package: "
                              "pip install 'netsparse_torch[tensorboard]' (or use logger=csv)") from None


class MetricsLogger:
    """``logger=none``: records nothing. Subclasses write; use as a context manager or call close()."""

    def __init__(self, columns: tuple[str, ...] = COLUMNS):
        self.columns = tuple(columns)
        self._epoch: int | None = None
        self._row: dict = {}

    def log(self, epoch: int, **values) -> None:
        """Record ``values`` (column -> number) of ``epoch``; a new epoch ends the previous one's row."""
        unknown = set(values) - set(self.columns)
        if unknown:
            raise KeyError(f"metrics: unknown columns {sorted(unknown)}; the columns are {self.columns}")
        if self._epoch is not None and epoch != self._epoch:
            self._flush()
        self._epoch = int(epoch)
        self._row.update(values)
        self._scalars(int(epoch), values)

    def close(self) -> None:
        if self._epoch is not None:
            self._flush()
        self._epoch = None

    def _flush(self) -> None:
        self._write_row({"epoch": self._epoch, **self._row})
        self._row = {}

    def _write_row(self, row: dict) -> None:
        pass

    def _scalars(self, epoch: int, values: dict) -> None:
        pass

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class CsvLogger(MetricsLogger):
    def __init__(self, path: Path, columns: tuple[str, ...] = COLUMNS):
        super().__init__(columns)
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "w", newline="")  # noqa: SIM115 - closed by close()
        self._csv = csv.DictWriter(self._file, fieldnames=self.columns, restval="")
        self._csv.writeheader()
        self._file.flush()

    def _write_row(self, row: dict) -> None:
        self._csv.writerow(row)
        self._file.flush()  # a crashed or stopped run keeps every finished epoch

    def close(self) -> None:
        super().close()
        if not self._file.closed:
            self._file.close()


class TensorBoardLogger(MetricsLogger):
    def __init__(self, directory: Path, columns: tuple[str, ...] = COLUMNS):
        super().__init__(columns)
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(directory))

    def _scalars(self, epoch: int, values: dict) -> None:
        for name, value in values.items():
            if value is not None:
                self.writer.add_scalar(name, float(value), epoch)

    def close(self) -> None:
        super().close()
        self.writer.flush()
        self.writer.close()


def open_logger(name: str, run_dir: Path | str | None, columns: tuple[str, ...] = COLUMNS) -> MetricsLogger:
    """The logger ``name`` writing into ``run_dir`` (the current directory when ``None``)."""
    check_logger(name)
    directory = Path(run_dir) if run_dir is not None else Path.cwd()
    if name == "csv":
        return CsvLogger(directory / "metrics.csv", columns)
    if name == "tensorboard":
        return TensorBoardLogger(directory, columns)
    return MetricsLogger(columns)
