"""Evaluation: metrics gathered exactly across ranks (ROC-AUC equal to scikit-learn's on all the
predictions together), the best validation epoch and early stopping."""

import numpy as np
import pytest
import torch
from cli import train_here
from sklearn.metrics import roc_auc_score

from netsparse_torch.evaluation import BestTracker, Evaluator, roc_auc
from netsparse_torch.run.launch import launch

N, BOUNDS = 60, [0, 13, 37, 60]  # three ranks own rows 0-12, 13-36, 37-59


def test_roc_auc_by_hand():
    # Positive scores 0.35 and 0.8 against negative 0.1 and 0.4: of the 4 (pos, neg) pairs, 3 are
    # ordered right (0.35 < 0.4 is the wrong one): AUC = 3/4.
    assert roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == 0.75
    assert roc_auc(np.array([1, 1]), np.array([0.2, 0.9])) is None  # one class: undefined
    assert roc_auc(np.array([], dtype=np.int64), np.array([])) is None


def _data(classes: int):
    gen = torch.Generator().manual_seed(classes)
    out = torch.randn(N, classes, generator=gen)
    y = torch.randint(0, classes, (N,), generator=gen)
    split = torch.randint(0, 3, (N,), generator=gen)  # 0 train, 1 val, 2 test
    return out, y, {"train": split == 0, "val": split == 1, "test": split == 2}


def _evaluate_my_rows(rank, world_size, classes):
    out, y, masks = _data(classes)
    rows = slice(BOUNDS[rank], BOUNDS[rank + 1])
    return Evaluator(classes)(out[rows], y[rows], {k: m[rows] for k, m in masks.items()})


@pytest.mark.parametrize("classes", [2, 3])
def test_metrics_gathered_over_ranks_equal_those_of_all_predictions(classes):
    got = launch(_evaluate_my_rows, 3, (classes,), timeout_s=60)
    out, y, masks = _data(classes)
    for split, m in masks.items():
        # Exact: the counts of all ranks are summed, not per-rank accuracies averaged.
        assert got[f"{split}_acc"] == int((out.argmax(1)[m] == y[m]).sum()) / int(m.sum())
        if classes == 2:
            want = roc_auc_score(y[m].numpy(), torch.softmax(out[m], 1)[:, 1].numpy())
            assert got[f"{split}_roc_auc"] == pytest.approx(want, abs=1e-12)
        else:
            assert f"{split}_roc_auc" not in got
    assert Evaluator(classes).val_metric == ("val_roc_auc" if classes == 2 else "val_acc")


def test_best_epoch_and_patience_by_hand():
    # Validation accuracy after epochs 0..5: 0.5, 0.6, 0.6, 0.55, 0.7, ...; patience 2 (epochs).
    # Epoch 1 is the best (0.6; the tie at epoch 2 keeps the earlier one); at epoch 3, 3 - 1 = 2 epochs
    # have passed without a better one: stop there, before 0.7 is ever seen.
    t = BestTracker("val_acc", patience=2)
    stops = [t.update(e, {"val_acc": v, "test_acc": v / 2}) for e, v in enumerate([0.5, 0.6, 0.6, 0.55])]
    assert stops == [False, False, False, True]
    rep = t.report()
    assert rep["best"] == {"epoch": 1, "val_acc": 0.6, "test_acc": 0.3, "metric": "val_acc"}
    assert rep["early_stop"] == {"patience": 2, "stopped_at_epoch": 3}
    assert [e["epoch"] for e in rep["evaluations"]] == [0, 1, 2, 3]
    # Without patience it never stops; an undefined metric (None) never becomes the best once one exists.
    t = BestTracker("val_roc_auc")
    assert not any(t.update(e, {"val_roc_auc": v}) for e, v in enumerate([None, 0.7, None, 0.65]))
    assert t.report()["best"]["epoch"] == 1 and t.report()["early_stop"] is None


def test_eval_every_best_and_patience_in_a_run(tmp_path):
    # lr=0.5 makes the validation accuracy of Cora peak early and wander: patience 3 stops the run.
    report, printed = train_here(tmp_path, "dataset=cora", "world_size=2", "epochs=60", "eval_every=1", "patience=3",
                                 "lr=0.5", "dropout=0.0")
    evals = report["evaluations"]
    assert [e["epoch"] for e in evals] == [e["epoch"] for e in report["epochs"]]  # every epoch evaluated
    vals = [e["val_acc"] for e in evals]
    best = report["best"]
    assert best["metric"] == "val_acc" and best["epoch"] == evals[vals.index(max(vals))]["epoch"]
    stop = report["early_stop"]["stopped_at_epoch"]
    assert stop == best["epoch"] + 3 == report["epochs"][-1]["epoch"] < 59
    # Between the best epoch and the stop, nothing beat the best.
    assert all(v <= best["val_acc"] for v in vals[best["epoch"]:])
    final = report["final"]
    assert {k: final[k] for k in ("train_acc", "val_acc", "test_acc")} == \
        {k: evals[-1][k] for k in ("train_acc", "val_acc", "test_acc")}
    assert "best" in printed and "early stop" in printed
