"""Evaluation during training: train/val/test metrics of the whole graph, gathered exactly across
ranks, the best validation epoch (``best.*``) and early stopping (``patience``).

Metrics: accuracy for every task (correct and total counts summed over ranks: exact integers), and
for binary tasks (two classes, e.g. tolokers and minesweeper, which their benchmark judges by ROC-AUC)
the ROC-AUC of the positive class's probability, computed by scikit-learn on the predictions of every
rank gathered together (the AUC of the whole split, not an average of per-rank AUCs). Model-agnostic:
it sees only the model's output rows, the labels and the split masks of this rank.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.distributed as dist

SPLITS = ("train", "val", "test")


def _sum(values: list[int]) -> list[int]:
    t = torch.tensor(values, dtype=torch.float64)  # counts < 2**53: exact
    if dist.is_initialized():
        dist.all_reduce(t)
    return [int(v) for v in t.tolist()]


def gather(array: np.ndarray) -> np.ndarray:
    """Every rank's ``array`` concatenated in rank order, on every rank."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return array
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, array)
    return np.concatenate(parts)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """scikit-learn's ROC-AUC; ``None`` when the split holds one class only (AUC undefined)."""
    from sklearn.metrics import roc_auc_score

    if labels.size == 0 or np.unique(labels).size < 2:
        return None
    return float(roc_auc_score(labels, scores))


class Evaluator:
    """``evaluator(out, y, masks)`` -> ``{train_acc, val_acc, test_acc}`` (plus ``*_roc_auc`` for a
    binary task); every rank gets the same numbers. The validation metric that picks ``best`` and drives
    ``patience`` is :attr:`val_metric`: ``val_roc_auc`` for a binary task, else ``val_acc``."""

    def __init__(self, num_classes: int):
        self.binary = num_classes == 2
        self.val_metric = "val_roc_auc" if self.binary else "val_acc"

    @torch.no_grad()
    def __call__(self, out: torch.Tensor, y: torch.Tensor, masks: dict[str, torch.Tensor]) -> dict[str, float | None]:
        pred = out.argmax(dim=1)
        counts = []
        for split in SPLITS:
            m = masks[split]
            counts += [int((pred[m] == y[m]).sum()), int(m.sum())]
        counts = _sum(counts)
        scores: dict[str, float | None] = {}
        for i, split in enumerate(SPLITS):
            correct, total = counts[2 * i], counts[2 * i + 1]
            scores[f"{split}_acc"] = correct / total if total else None
        if self.binary:
            positive = torch.softmax(out.float(), dim=1)[:, 1]
            for split in SPLITS:
                m = masks[split]
                labels = gather(y[m].cpu().numpy().astype(np.int64))
                scores[f"{split}_roc_auc"] = roc_auc(labels, gather(positive[m].cpu().numpy().astype(np.float64)))
        return scores


def _better(value: float | None, best: float | None) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return best is None or value > best


class BestTracker:
    """Keeps every evaluation, the one at the best validation epoch (strictly better wins; ties keep the
    earlier) and decides early stopping: ``update`` returns True when ``patience`` > 0 epochs have
    passed since the best one. ``patience`` counts epochs, not evaluations."""

    def __init__(self, metric: str, patience: int = 0):
        self.metric, self.patience = metric, int(patience)
        self.history: list[dict] = []
        self.best: dict | None = None
        self.stopped_at: int | None = None

    def update(self, epoch: int | None, scores: dict) -> bool:
        entry = {"epoch": epoch, **scores}
        self.history.append(entry)
        if self.best is None or _better(scores.get(self.metric), self.best.get(self.metric)):
            self.best = entry
        if self.patience > 0 and epoch is not None and self.best["epoch"] is not None \
                and epoch - self.best["epoch"] >= self.patience:
            self.stopped_at = epoch
            return True
        return False

    def report(self) -> dict:
        """``best`` (with the ``metric`` that chose it), ``evaluations``, ``early_stop``."""
        return {"best": {**(self.best or {}), "metric": self.metric},
                "evaluations": self.history,
                "early_stop": {"patience": self.patience, "stopped_at_epoch": self.stopped_at}
                if self.patience > 0 else None}

    def state(self) -> dict:
        return {"history": self.history, "best": self.best}

    def load_state(self, state: dict | None) -> None:
        if state:
            self.history, self.best = list(state["history"]), state["best"]
